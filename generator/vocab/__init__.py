"""The vocabulary every layer above shares: API versions and groups (api.py), well-known labels,
annotations and names (labels.py, names.py), the objects and units a render is made of
(objects.py, units.py), and the catalogues of the cluster add-ons (addons.py) and of the exporters'
unified series (exporters.py).

Data and small types only: this package imports nothing of the project but findings, so the
values loader, the builders, the checks, validate and the simulation all name a thing the same
way. No API version or label key is spelled outside it (tests/project/test_vocabulary.py).
"""
