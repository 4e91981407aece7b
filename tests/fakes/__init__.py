"""Test doubles that are real servers or real objects (never mocks): loopback provider APIs,
scripted chat models and a tiny single-turn protocol. Importable by Ray workers as
``tests.fakes`` because the worktree root is on their PYTHONPATH."""
