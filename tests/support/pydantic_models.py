"""Pydantic models for the tests (test_catalogues_functions, and the nested answer schema of the
structured-answer tests); a module of their own, so pydantic stays optional."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Address(BaseModel):
    city: str
    country: str = "GB"


class Customer(BaseModel):
    name: str
    address: Address


def register(customer: Customer, notify: bool = False) -> Customer:
    """Register a customer."""
    return customer


class Item(BaseModel):
    name: str = Field(max_length=20)
    count: int


class Order(BaseModel):
    """An answer schema with ``$defs``: a nested model, and a bounded list of it."""

    main: Item
    more: list[Item] = Field(max_length=2)
