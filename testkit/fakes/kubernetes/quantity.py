"""Kubernetes resource quantities ("500m", "2", "1.5Gi", "512M") as plain numbers."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


def parse_quantity(value: str | float) -> Decimal:
    """The value of a quantity; raises ``ValueError`` naming the bad text."""
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    text = str(value).strip()
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"):
        if text.endswith(suffix):
            number, mult = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, mult = text, Decimal(1)
    try:
        if not number or number.lower() in ("nan", "inf", "-inf", "infinity"):
            raise InvalidOperation
        return Decimal(number) * mult
    except InvalidOperation:
        raise ValueError(f"quantities must match the regular expression "
                         f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}") from None
