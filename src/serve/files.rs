//! The open-files limit (`ulimit -n`) against the connections the proxy
//! may hold. Each client connection is a descriptor, and so is each
//! connection to the upstream. Past the limit, accepting fails at once and
//! leaves the listener ready, so without a bound under the limit and a
//! pause after such a failure, the accept loop spins a core while a client
//! holds idle connections open, and no request gets in.

use std::time::Duration;

/// Descriptors kept for what is not a connection: the listener, the log,
/// the standard streams, the runtime's own (epoll, eventfd), files read.
pub(crate) const OTHER_FILES: u64 = 64;

/// How long the accept loop waits after running out of descriptors (or of
/// memory for a socket) before it tries again.
pub(crate) const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// How often, at most, a failure to accept is said on standard error.
pub(crate) const SAY_EVERY: Duration = Duration::from_secs(10);

/// The client connections the proxy may hold open, within the open-files
/// limit, and what it did to the limit to get them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The soft limit to set, when it must be raised.
    pub(crate) raise_to: Option<u64>,
    /// Client connections open at once.
    pub(crate) sockets: usize,
}

/// What `requests` request slots at `per_slot` client connections each
/// need, within a soft limit `soft` that may be raised up to `hard`. A
/// request served also holds a connection to the upstream (as many as
/// the slots, and no more than the client connections that ask), and
/// [`OTHER_FILES`] are kept aside.
pub(crate) fn plan(requests: usize, per_slot: usize, soft: u64, hard: u64) -> Plan {
    let wanted = requests.saturating_mul(per_slot) as u64;
    let requests = requests as u64;
    let needed = wanted
        .saturating_add(requests.min(wanted))
        .saturating_add(OTHER_FILES);
    let raise_to = (soft < needed).then(|| needed.min(hard.max(soft)));
    let room = raise_to.unwrap_or(soft).saturating_sub(OTHER_FILES);
    // Every slot's upstream connection beside the client connections; or,
    // where the slots are more than that leaves room for, as many client
    // connections as upstream ones.
    let beside = room.saturating_sub(requests);
    let sockets = if beside >= requests {
        beside
    } else {
        (room / 2).min(requests)
    };
    Plan {
        raise_to: raise_to.filter(|&r| r > soft),
        sockets: usize::try_from(sockets.min(wanted).max(1)).unwrap_or(usize::MAX),
    }
}

/// Raises the soft open-files limit as far as `requests` slots need (up to
/// the hard limit) and gives the client connections' bound, with a note
/// when that bound is under what the slots asked for.
pub(crate) fn fit(requests: usize, per_slot: usize) -> (usize, Option<String>) {
    let wanted = requests.saturating_mul(per_slot);
    let Some((soft, hard)) = nofile() else {
        return (wanted, None);
    };
    let mut plan = plan(requests, per_slot, soft, hard);
    let mut limit = soft;
    if let Some(to) = plan.raise_to {
        if set_nofile(to, hard) {
            limit = to;
        } else {
            plan = self::plan(requests, per_slot, soft, soft);
        }
    }
    let note = (plan.sockets < wanted).then(|| {
        format!(
            "ctxclean serve: open files are limited to {limit} (`ulimit -n`; hard limit {}): \
             open connections bounded at {} instead of {wanted} (--max-connections {requests}: \
             an upstream connection beside each request served, and {OTHER_FILES} files kept \
             aside); raise the limit, or lower --max-connections",
            if hard == libc::RLIM_INFINITY {
                "unlimited".to_string()
            } else {
                hard.to_string()
            },
            plan.sockets,
        )
    });
    (plan.sockets, note)
}

/// Whether an accept failed for want of descriptors or memory: the
/// connection waits in the backlog and the listener stays ready.
pub(crate) fn out_of_resources(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

fn nofile() -> Option<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0)
        .then_some((r.rlim_cur, r.rlim_max))
}

fn set_nofile(soft: u64, hard: u64) -> bool {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct it is given, nothing else.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_with_room_is_left_alone() {
        let p = plan(256, 4, 20_000, 20_000);
        assert_eq!(
            p,
            Plan {
                raise_to: None,
                sockets: 1024
            }
        );
    }

    #[test]
    fn a_low_soft_limit_is_raised_as_far_as_needed() {
        // 1,024 client connections, 256 upstream, 64 aside.
        let p = plan(256, 4, 1024, 524_288);
        assert_eq!(
            p,
            Plan {
                raise_to: Some(1344),
                sockets: 1024
            }
        );
        let p = plan(256, 4, 1024, libc::RLIM_INFINITY);
        assert_eq!(p.raise_to, Some(1344));
    }

    #[test]
    fn a_low_hard_limit_lowers_the_bound() {
        let p = plan(256, 4, 1024, 1024);
        assert_eq!(
            p,
            Plan {
                raise_to: None,
                sockets: 1024 - 256 - 64
            }
        );
        let p = plan(100, 4, 200, 300);
        assert_eq!(
            p,
            Plan {
                raise_to: Some(300),
                sockets: 300 - 100 - 64
            }
        );
        // Slots that the limit leaves no room for: as many client
        // connections as upstream ones.
        let p = plan(30, 4, 100, 100);
        assert_eq!(p.sockets, (100 - 64) / 2);
        assert_eq!(
            plan(1_000_000, 4, 20_000, 20_000).sockets,
            (20_000 - 64) / 2
        );
        // Never none: one connection, whatever the limit says.
        assert_eq!(plan(100, 4, 50, 50).sockets, 1);
    }

    #[test]
    fn descriptors_running_out_is_told_from_a_reset() {
        assert!(out_of_resources(&std::io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(out_of_resources(&std::io::Error::from_raw_os_error(
            libc::ENFILE
        )));
        assert!(!out_of_resources(&std::io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
    }
}
