"""Test doubles that are real servers or real objects (never mocks): loopback provider APIs
speaking each wire format, a tiny single-turn protocol and a views-table writer. They live in
the package because the eval benchmark uses them too, and Ray workers import them from here."""
