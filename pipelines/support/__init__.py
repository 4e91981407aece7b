"""Shared Ray and job plumbing of the verbs: job entry points, the Ray connection, evaluation actors."""
