"""Budgets, accountants (privacy filters) and the persistent ledger."""

from dpframe.accounting.accountants import (
    Accountant,
    ApproxDPAccountant,
    Charge,
    NoiseAllocation,
    PureDPAccountant,
    ZCDPAccountant,
    make_accountant,
    rho_from_epsilon_delta,
    zcdp_epsilon,
)
from dpframe.accounting.budget import Budget, PrivacyRequest, to_fraction
from dpframe.accounting.ledger import Ledger, PendingCharge, default_ledger_path

__all__ = [
    "Accountant",
    "ApproxDPAccountant",
    "Budget",
    "Charge",
    "Ledger",
    "NoiseAllocation",
    "PendingCharge",
    "PrivacyRequest",
    "PureDPAccountant",
    "ZCDPAccountant",
    "default_ledger_path",
    "make_accountant",
    "rho_from_epsilon_delta",
    "to_fraction",
    "zcdp_epsilon",
]
