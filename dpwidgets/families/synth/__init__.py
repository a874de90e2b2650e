"""The synthetic-data family (DPCopula, Li 2017, Ch. 3)."""
