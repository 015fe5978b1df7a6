# SPDX-License-Identifier: MIT
"""gattd for Python: a program's side of gattd's control API (docs/python.md).

    import gattd

    app = gattd.Peripheral()

    @app.on_read("temperature")
    def temperature(request):
        return read_sensor().to_bytes(2, "little", signed=True)

    @app.on_write("setpoint")
    def setpoint(value, request):
        if not 1000 <= int.from_bytes(value, "little", signed=True) <= 3000:
            raise gattd.AttError(0x80)

    @app.on_channel("logs")                   # an L2CAP channel, as a SOCK_SEQPACKET socket
    async def logs(sock, request):
        await asyncio.get_running_loop().sock_sendall(sock, b"hello " + request.address.encode())

    app.run()
"""

from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors
from .events import *  # noqa: F401,F403
from .events import __all__ as _events
from .channels import ChannelRequest
from .peripheral import EventStream, Peripheral, Request, bus_name

__version__ = "0.1.0"
__all__ = ["Peripheral", "Request", "ChannelRequest", "EventStream", "bus_name", *_errors, *_events]
