from generator.cli import run

run()
