"""The render stage: values, checks, bases and overlays laid out, the tree written atomically."""
