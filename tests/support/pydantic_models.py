"""Pydantic models for test_catalogues_functions; a module of their own, so pydantic stays optional."""

from __future__ import annotations

from pydantic import BaseModel


class Address(BaseModel):
    city: str
    country: str = "GB"


class Customer(BaseModel):
    name: str
    address: Address


def register(customer: Customer, notify: bool = False) -> Customer:
    """Register a customer."""
    return customer
