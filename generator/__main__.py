from generator.cli.main import run

run("python -m generator")
