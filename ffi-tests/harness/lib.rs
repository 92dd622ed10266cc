//! harness placeholder
