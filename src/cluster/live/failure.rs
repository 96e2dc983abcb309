//! How a call to the API server failed, told apart by whether the server
//! answered. The one classifier for the live view's watches and the
//! deletion-cost loop's Lease, Deployment and patch calls: an outage is
//! the live view's to report, once (docs/live-source.md); an answer that
//! is an error (a missing RBAC right, a 500, an undecodable object) is the
//! caller's to report.

use kube::runtime::watcher;

/// Why a call or a watch failed, which decides how loudly it is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone: the watch fell behind the server's history; routine.
    Expired,
    /// No answer: connection refused, reset or timed out, TLS failed.
    Unreachable,
    /// The server answered with an error (500, 403, an undecodable object).
    Refused,
}

impl Failure {
    /// A failed call.
    pub fn of(error: &kube::Error) -> Self {
        match error {
            kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
                Self::Unreachable
            }
            kube::Error::Api(status) if status.code == 410 => Self::Expired,
            _ => Self::Refused,
        }
    }

    /// A watch that ended.
    pub fn of_watch(error: &watcher::Error) -> Self {
        match error {
            watcher::Error::WatchError(status) if status.code == 410 => Self::Expired,
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => Self::of(e),
            _ => Self::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_told_apart_by_whether_the_server_answered() {
        use kube::core::Status;
        let status = |code| Status::failure("m", "r").with_code(code).boxed();
        let refused = || -> Box<dyn std::error::Error + Send + Sync> {
            Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
        };
        let cases = [
            (watcher::Error::WatchError(status(410)), Failure::Expired),
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(410))),
                Failure::Expired,
            ),
            (
                watcher::Error::WatchStartFailed(kube::Error::Service(refused())),
                Failure::Unreachable,
            ),
            (
                watcher::Error::WatchFailed(kube::Error::ReadEvents(std::io::Error::other(
                    "peer closed connection without sending TLS close_notify",
                ))),
                Failure::Unreachable,
            ),
            (
                watcher::Error::InitialListFailed(kube::Error::Api(status(500))),
                Failure::Refused,
            ),
            (watcher::Error::WatchError(status(403)), Failure::Refused),
            (watcher::Error::NoResourceVersion, Failure::Refused),
        ];
        for (error, want) in cases {
            assert_eq!(Failure::of_watch(&error), want, "{error}");
        }
    }

    #[test]
    fn a_call_answered_with_an_error_or_an_undecodable_body_is_refused() {
        use kube::core::Status;
        let forbidden = kube::Error::Api(Status::failure("no", "Forbidden").with_code(403).boxed());
        assert_eq!(Failure::of(&forbidden), Failure::Refused);
        let garbled = serde_json::from_str::<u8>("x").unwrap_err();
        assert_eq!(
            Failure::of(&kube::Error::SerdeError(garbled)),
            Failure::Refused
        );
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(
            Failure::of(&kube::Error::Service(Box::new(reset))),
            Failure::Unreachable
        );
    }
}
