//! idmint's integration tests: one binary, a module per concept, all against a
//! real MongoDB wire-protocol server (see `support`).

mod support;

mod bench;
mod cli;
mod clocks;
mod conformance;
mod counter_kinds;
mod cyclic;
mod docs;
mod durability;
mod installer;
mod java_client;
mod kinds;
mod lock;
mod lock_cohort;
mod lock_fair;
mod lock_job_control;
mod lock_run;
mod lock_stored_functions;
mod lost_values;
mod monitor;
mod network_faults;
mod periodic;
mod policy;
mod policy_contracts;
mod prefixes;
mod readme;
mod serve;
mod serve_admin;
mod serve_hostile;
mod serve_inprocess;
mod serve_schema;
mod snowflake;
mod standard_ids;
mod stored_functions;
mod striped;
mod striped_cyclic;
mod striped_deployments;
mod striped_periodic;
mod striped_segment;
mod striped_snowflake;
mod striped_twin;
mod test_kind;
