//! Unwind guards: every entry into user code on a call's path goes through one of these, so a panic becomes
//! a message for that call's result instead of unwinding through the batch.
//!
//! Three things can panic: calling user code ([`catch`]), polling a user future ([`Guarded`]), and dropping
//! either — a future, a value, or a panic payload whose own `Drop` panics ([`drop_quietly`]). A value that
//! panics while being dropped under [`drop_quietly`] is leaked instead of unwinding further. Synchronous
//! work that may take a while (a plain `fn` tool, a search) runs through [`off_async_threads`].

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs `run` on tokio's blocking threads when a runtime is there, so slow synchronous work never stalls
/// other tasks, else on this thread. A panic in `run` unwinds here, as it would have inline (the caller's
/// guard catches it); `None` when the runtime cancelled the task (it was shutting down).
pub(crate) async fn off_async_threads<T: Send + 'static>(
    run: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => match runtime.spawn_blocking(run).await {
            Ok(value) => Some(value),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(_) => None,
        },
        Err(_) => Some(run()),
    }
}

/// Runs `f`; a panic comes back as its message.
#[inline]
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(message_of)
}

/// The text of a panic payload. The payload is dropped under a guard, since its own `Drop` may panic.
pub(crate) fn message_of(payload: Box<dyn Any + Send>) -> String {
    let text = match catch_unwind(AssertUnwindSafe(|| panic_text(payload.as_ref()))) {
        Ok(text) => text,
        Err(second) => {
            std::mem::forget(second);
            "a panic whose payload could not be read".to_owned()
        }
    };
    drop_quietly(payload);
    text
}

/// The text of a panic payload, without taking it.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

/// Drops `value`; a panic while dropping is logged, and its payload leaked (dropping that could panic
/// again, without end).
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        tracing::error!("a value panicked while it was dropped; the panic was contained");
        std::mem::forget(payload);
    }
}

/// A future whose polls are guarded, and whose future is dropped under a guard as soon as it finishes (or
/// when the `Guarded` itself is dropped).
pub(crate) struct Guarded<F>(Option<F>);

impl<F> Guarded<F> {
    /// Guards `future`.
    pub(crate) fn new(future: F) -> Self {
        Guarded(Some(future))
    }
}

impl<F: Future + Unpin> Future for Guarded<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.0.as_mut() else {
            return Poll::Ready(Err("the future was polled after it finished".to_owned()));
        };
        let outcome = match catch_unwind(AssertUnwindSafe(|| Pin::new(future).poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(output)) => Ok(output),
            Err(payload) => Err(message_of(payload)),
        };
        drop_quietly(self.0.take());
        Poll::Ready(outcome)
    }
}

impl<F> Drop for Guarded<F> {
    fn drop(&mut self) {
        if let Some(future) = self.0.take() {
            drop_quietly(future);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct PanicsOnDrop;

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("drop");
        }
    }

    #[test]
    fn a_payload_that_panics_when_dropped_is_contained() {
        let text = catch(|| std::panic::panic_any(PanicsOnDrop)).unwrap_err();
        assert_eq!(text, "a panic with a non-text payload");
    }

    #[test]
    fn a_value_that_panics_when_dropped_is_contained() {
        drop_quietly(PanicsOnDrop);
    }

    /// A future that is ready at once and panics when dropped afterwards.
    struct ReadyThenPanicsOnDrop;

    impl Future for ReadyThenPanicsOnDrop {
        type Output = u8;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<u8> {
            Poll::Ready(7)
        }
    }

    impl Drop for ReadyThenPanicsOnDrop {
        fn drop(&mut self) {
            panic!("drop");
        }
    }

    #[test]
    fn a_future_that_panics_when_dropped_after_finishing_keeps_its_output() {
        let output = futures::executor::block_on(Guarded::new(ReadyThenPanicsOnDrop));
        assert_eq!(output, Ok(7));
    }

    #[test]
    fn a_future_that_panics_when_dropped_unfinished_is_contained() {
        drop(Guarded::new(ReadyThenPanicsOnDrop));
    }
}
