//! Loopback helpers for the tests and the benches (which include this file
//! by path, beside moto.rs).

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on loopback `port`; panics
/// naming `what` after `limit`.
pub fn wait_listening(port: u16, what: &str, limit: Duration) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < limit, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
