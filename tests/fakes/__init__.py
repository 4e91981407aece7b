"""Test doubles that are real servers or real objects (never mocks): loopback provider APIs,
scripted chat models and a tiny single-turn protocol. Importable by Ray workers as
``tests.fakes``; loopback provider servers, the single-turn protocol and the views writer
live in ``medscope.testing`` because the eval benchmark uses them too."""
