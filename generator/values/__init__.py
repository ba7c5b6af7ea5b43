"""The values layer: discovery and safe loading of values files, their schema, layering, the
resolved model, the vendor catalog and the PCI inventories. Imports nothing above findings."""
