"""Kubernetes resource quantities ('4', 8, '500m', '2Gi', '1e3'): one parser for every layer
(quota accounting, general requests, the diff's risk flags).

source: kubernetes/apimachinery pkg/api/resource/quantity.go (the suffixes and their factors).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

_SUFFIX = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+)|([a-zA-Z]*))$")


def parse_quantity(value: Any) -> Fraction | None:
    """A Kubernetes resource quantity (k8s.io/apimachinery pkg/api/resource/quantity.go
    suffixes), or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Fraction(value)
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(3) not in (*_SUFFIX, None):
        return None
    try:
        number = Fraction(match.group(1))
    except ValueError:
        return None
    if match.group(2) is not None:
        return number * Fraction(10) ** int(match.group(2))
    return number * _SUFFIX[match.group(3) or ""]


def format_quantity(value: Fraction) -> str:
    """The shortest exact form: whole units, Gi/Mi/Ki for whole binary multiples, else milli
    (rounded up, as the API server rounds)."""
    if value.denominator == 1:
        n = int(value)
        for suffix in ("Gi", "Mi", "Ki"):
            if n and n % _SUFFIX[suffix] == 0:
                return f"{n // int(_SUFFIX[suffix])}{suffix}"
        return str(n)
    return f"{math.ceil(value * 1000)}m"
