"""Tests of agui_wire, by kind: unit/, differential/ (C vs pure vs upb), contract/
(what the docs promise), interop/ (the npm peers), e2e/, cli/, fuzz/; helpers in support/."""
