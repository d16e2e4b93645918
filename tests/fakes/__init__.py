"""Test doubles other areas can share (loopback only)."""
