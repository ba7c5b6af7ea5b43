"""`render.py report`: the fleet on one page (HTML with charts) or in Markdown tables.

numbers.py takes the figures from the code the checks and `plan` run, inputs.py records what the
report was made from, charts.py draws them (Matplotlib to inline SVG), page.py fills the templates.
"""
