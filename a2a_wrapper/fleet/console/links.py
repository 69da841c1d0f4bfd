"""One-time sign-in links, for a console with no operators configured (the demo, a first run), as notebook
servers sign in with `?token=`.

The fleet makes a link at start and prints it on its terminal (stdout, never the log). The link signs in once,
within LINK_LIFETIME; then it is dead, and a second use is refused with a sentence saying why (used, expired,
replaced by a newer link). Only the token's SHA-256 digest is kept, so that a lookup compares no secret byte by
byte and a memory dump holds no usable link.
"""

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable

LINK_LIFETIME = 15 * 60.0
SIGN_IN_PATH = "/signin"  # under the console's path; the token in its query
DEAD_KEPT = 64  # dead links remembered, so that a second use is told why rather than "unknown"


class SignInLinks:
    def __init__(self, lifetime: float = LINK_LIFETIME, clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._live: tuple[str, float] | None = None  # the digest of the one live link, and when it expires
        self._dead: OrderedDict[str, str] = OrderedDict()  # digest -> why it signs in no more

    def issue(self) -> str:
        """A new link's token; a link issued before and still unused is dead from now on."""
        if self._live is not None:
            self._bury(self._live[0], "a newer sign-in link replaced it")
        token = secrets.token_urlsafe(32)
        self._live = (_digest(token), self._clock() + self.lifetime)
        return token

    def redeem(self, token: str) -> str | None:
        """None when `token` is the live link's (which is dead from now on); otherwise the sentence why not."""
        digest = _digest(token)
        if self._live is not None and self._live[0] == digest:
            expires = self._live[1]
            self._live = None
            if expires <= self._clock():
                self._bury(digest, f"it expired ({self.lifetime / 60:.0f} minutes after it was made)")
            else:
                self._bury(digest, "it was used already: each link signs in once")
                return None
        why = self._dead.get(digest)
        return f"This sign-in link no longer signs in: {why}." if why else "This is not a sign-in link of this console."

    def _bury(self, digest: str, why: str) -> None:
        self._dead[digest] = why
        while len(self._dead) > DEAD_KEPT:
            self._dead.popitem(last=False)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
