"""Work in a forked process: start it now, take its result later. A big log keeps both cores busy."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


class ProcessDied(RuntimeError):
    """A forked process ended without sending its result (killed, or out of memory)."""


def can_fork() -> bool:
    import multiprocessing  # here: a small log never forks, and need not pay for importing it

    return "fork" in multiprocessing.get_all_start_methods()


def start(work: Callable[..., Any], *args: Any) -> Pending:
    """Run work(*args) in a forked process at once (where there is no fork: when its result is asked for).

    A forked process shares this one's memory as it was, so the arguments are not copied; only the
    result travels back, pickled.
    """
    return Pending(work, args)


class Pending:
    """Work started in a forked process: result() waits for what it returned, or raises what it raised."""

    def __init__(self, work: Callable[..., Any], args: tuple[Any, ...]):
        self.work, self.args, self.child = work, args, None
        if can_fork():
            import multiprocessing

            context = multiprocessing.get_context("fork")
            self.receiver, sender = context.Pipe(duplex=False)
            self.child = context.Process(target=_run, args=(work, args, sender), daemon=True)
            self.child.start()
            sender.close()

    def result(self) -> Any:
        if self.child is None:
            return self.work(*self.args)
        try:
            outcome = self.receiver.recv()
        except EOFError:  # it died without a word (killed): say so, not "cannot read"
            raise ProcessDied("a process working on part of the analysis died") from None
        finally:
            self.cancel()
        if isinstance(outcome, _Raised):
            raise outcome.error
        return outcome

    def cancel(self) -> None:
        """End the process (a no-op once it has sent its result): an error elsewhere leaves none behind."""
        if self.child is not None:
            self.child.kill()
            self.child.join()
            self.receiver.close()


class _Raised:
    """What the work raised, sent back to be raised again where its result is asked for."""

    def __init__(self, error: BaseException):
        self.error = error


def _run(work: Callable[..., Any], args: tuple[Any, ...], sender: Connection[Any, Any]) -> None:
    # Text this process inherited in stdout's buffer is the parent's to write: multiprocessing
    # flushes the standard streams when the child ends, so it would come out twice.
    sys.stdout = None
    try:
        outcome = work(*args)
    except BaseException as error:
        outcome = _Raised(error)
    try:
        sender.send(outcome)
    except Exception as error:  # a result or an error that does not pickle
        sender.send(_Raised(RuntimeError(f"a forked process could not send its result: {error}")))
