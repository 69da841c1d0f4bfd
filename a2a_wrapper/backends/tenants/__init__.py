"""One backend per caller: a pool that keeps the Backend contract and runs each caller's turns in its own backend."""

from a2a_wrapper.backends.tenants.pool import Launcher, TenantPool

__all__ = ["Launcher", "TenantPool"]
