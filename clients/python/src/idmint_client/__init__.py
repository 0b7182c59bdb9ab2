"""A client of ``idmint serve`` (standard library only): values and IDs
fetched in batches and handed out from memory, numbers of gap-free series,
failing over between several instances. The asyncio flavour is in
:mod:`idmint_client.aio`."""

from .clients import IdClient, ValueClient
from .errors import ClientClosedError, IdmintError
from .failover import InstanceHealth
from .series import Reservation, SeriesClient, Settled

__all__ = [
    "ValueClient",
    "IdClient",
    "SeriesClient",
    "Reservation",
    "Settled",
    "IdmintError",
    "ClientClosedError",
    "InstanceHealth",
]
__version__ = "0.1.0"
