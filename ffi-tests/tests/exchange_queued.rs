//! A phase on the C backend large enough (at least 600 datagrams, more than the AF_UNIX socket
//! queue holds) that the backend answers "would block" and the core's send queue holds the rest:
//! the sender hands every datagram over before the receiver reads, then the receiver reads while
//! the sender's core drains its queue, in both directions. Every number still arrives exactly
//! once, in a plain build and under AddressSanitizer. And when the receiver does not read, a
//! switch counts what the old backend could not take as lost, exactly.

use parsec_net_ffi_tests::backends::unixdgram;
use parsec_net_ffi_tests::exchange::{queued_exchange, unix_queue_len, Pair, REPLY_TIMEOUT};
use parsec_net_ffi_tests::Build;

#[test]
fn overflowing_the_c_backend_socket_queue_defers_sends_and_loses_nothing() {
    let backend = unixdgram(false);
    let program = Build::c("c/exchange.c").build();
    let (count, deferred_a, deferred_b) =
        queued_exchange(&program, &backend.display().to_string(), &[]);
    println!(
        "{count} datagrams each way over a socket queue of {}; deferred by the core: A {deferred_a}, B {deferred_b}",
        unix_queue_len()
    );
}

#[test]
fn overflowing_the_c_backend_socket_queue_defers_sends_and_loses_nothing_under_asan() {
    let backend = unixdgram(true);
    let program = Build::c("c/exchange.c").asan().build();
    let env = [(
        "ASAN_OPTIONS".to_string(),
        "detect_leaks=1:halt_on_error=1:exitcode=1".to_string(),
    )];
    queued_exchange(&program, &backend.display().to_string(), &env);
}

#[test]
fn a_switch_counts_queued_datagrams_the_old_backend_could_not_take_as_lost() {
    // A fills B's socket queue and its own core queue while B does not read, then switches away:
    // the old backend cannot take the rest within the switch's budget. Whatever B gets plus what
    // A reports lost must be exactly what A sent, and B gets an unbroken prefix of the numbers.
    let backend = unixdgram(false).display().to_string();
    let program = Build::c("c/exchange.c").build();
    let count = unix_queue_len() + 20;
    let mut pair = Pair::start(&program, &[]);
    pair.switch(&backend);
    pair.introduce();
    let sent = pair.a.ok(&format!("send 0 {count}"), REPLY_TIMEOUT);
    assert!(!sent.ends_with(" queued 0"), "nothing was queued: {sent}");
    let line = pair.a.ok("exec net.api udp", REPLY_TIMEOUT);
    assert!(line.contains("could not be sent"), "{line}");
    let lost = pair.a.status_number_before("lost");
    pair.b.ok("exec net.api udp", REPLY_TIMEOUT);
    let received = pair
        .b
        .call(&format!("recv_until {count} 300"), REPLY_TIMEOUT);
    let received: u64 = received
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply {received:?}"));
    assert_eq!(
        received + lost,
        count,
        "B received {received}, A counted {lost} lost"
    );
    pair.b.ok(&format!("check 0 {received}"), REPLY_TIMEOUT);
    println!("{count} sent: {received} delivered through the switch, {lost} counted lost");
    pair.quit();
}
