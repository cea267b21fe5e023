"""The implementations held to each other: Cython vs pure Python vs upb, fast paths vs
the general ones."""
