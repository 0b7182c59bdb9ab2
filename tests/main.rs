//! idmint's integration tests: one binary, a module per concept, all against a
//! real MongoDB wire-protocol server (see `harness`).

mod fault_proxy;
mod harness;

mod cli;
mod clocks;
mod conformance;
mod counter_kinds;
mod docs;
mod durability;
mod installer;
mod java_client;
mod lock;
mod lock_cohort;
mod lock_fair;
mod lock_job_control;
mod lost_values;
mod mongosh;
mod monitor;
mod network_faults;
mod periodic;
mod policy;
mod policy_contracts;
mod prefixes;
mod readme;
mod sequence;
mod serve;
mod serve_admin;
mod serve_hostile;
mod serve_inprocess;
mod serve_schema;
mod serve_support;
mod snowflake;
mod strategies;
