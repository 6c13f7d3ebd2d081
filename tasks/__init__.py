"""Prefect ``@task`` wrappers: one thin function per unit of work, no logic.

Retries are for infrastructure failures only (:func:`tasks.retry.infra_only`); a model's
bad answer is data, never a retry.
"""
