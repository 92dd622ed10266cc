//! Helpers shared by the tests of the `parsecnet` program (each test file takes what it needs).

#![allow(dead_code)]

pub mod processes;
pub mod text_client;
