"""Scripted stand-ins for the policy model, served over an OpenAI-compatible endpoint."""

from envtools.policies.base import ChatResult, Policy

__all__ = ["ChatResult", "Policy"]
