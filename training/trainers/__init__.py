"""Trainers: turn samples into a better policy. ``local`` (torch, one device) and ``verl``."""
