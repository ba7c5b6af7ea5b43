from generator.cli import run

run("python -m generator")
