//! Broadcast discovery on a host without a default route (a LAN of network namespaces whose
//! hosts have only their subnet's route): `connect` with no address cannot reach
//! 255.255.255.255, and the error must say what to do (set `net.udp.broadcast` to the subnet's
//! broadcast address, or connect to an address), not just "Network is unreachable". With the
//! subnet's broadcast address set, the same `connect` starts. Needs root; without it the test
//! prints SKIPPED and passes.

use std::time::Duration;

use parsec_net_ffi_tests::netns::{unavailable, Lan};
use parsec_net_ffi_tests::process::run;
use parsec_net_ffi_tests::server::parsecnet;

#[test]
fn discovery_without_a_default_route_says_to_set_the_broadcast_address() {
    if let Some(why) = unavailable() {
        println!("SKIPPED: needs root for network namespaces ({why})");
        return;
    }
    let lan = Lan::create(1);
    let console = |script: &str| {
        let mut command = lan.command(0, &parsecnet());
        command
            .args(["console", "--exec", script])
            .env("PARSEC_NET_LOG", "off");
        run(command, Duration::from_secs(20))
    };
    let out = console("connect");
    assert!(!out.status.success(), "{}{}", out.stdout, out.stderr);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("no route to 255.255.255.255"), "{text}");
    assert!(
        text.contains("set net.udp.broadcast to the subnet's broadcast address"),
        "{text}"
    );
    let out = console(&format!("net.udp.broadcast {}; connect", lan.broadcast()));
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("looking for other players"), "{text}");
}
