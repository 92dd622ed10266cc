//! Helpers shared by the simulated tests (each test file includes this module).
pub mod link_parts;
pub mod live_servers;
pub mod peer_node;
pub mod relay_client;
pub mod seeds;
pub mod sessions;
pub mod sim_log;
