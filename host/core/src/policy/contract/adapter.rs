//! [`adapter!`]: the adapter of a contract version, made by one line in the
//! version's file.

/// The adapter of one contract version, the same in every version but for
/// its generated bindings (`$bindings`, a module of `bindings.rs`), its
/// version string, and whether its `validate` takes the snowflake layout
/// (`layout: yes`, from 0.3.0) or not (`layout: no`, 0.2.0, which drops
/// it). It makes the version's `VERSION` and an `Adapter` behind it; the
/// version's file adds the conversions of what differs (its `IdParts`,
/// `Stamp` and `FormatError`).
macro_rules! adapter {
    ($bindings:ident, $version:literal, layout: $layout:ident) => {
        use $crate::policy::bindings::$bindings;
        use $crate::policy::contract::{Call, Contract, Version};
        use $crate::policy::error::PolicyError;
        use $crate::policy::sandbox::CallState;
        use $crate::policy::types::{FormatError, InvalidId, PolicyInfo};

        #[doc = concat!("Contract ", $version, ".")]
        pub(super) const VERSION: Version = Version {
            version: $version,
            bind,
        };

        fn bind(
            pre: &wasmtime::component::InstancePre<CallState>,
        ) -> wasmtime::Result<Box<dyn Contract>> {
            Ok(Box::new(Adapter($bindings::IdPolicyPre::new(pre.clone())?)))
        }

        #[doc = concat!("A policy of contract ", $version, ", pre-linked.")]
        struct Adapter($bindings::IdPolicyPre<CallState>);

        impl Adapter {
            /// Runs `f` against a fresh instance (see [`Call::run`]).
            fn run<R>(
                &self,
                call: &Call<'_>,
                f: impl FnOnce(
                    &$bindings::IdPolicy,
                    &mut wasmtime::Store<CallState>,
                ) -> wasmtime::Result<R>,
            ) -> Result<R, PolicyError> {
                call.run(self.0.engine(), |store| self.0.instantiate(store), f)
            }
        }

        impl Contract for Adapter {
            fn version(&self) -> &'static str {
                VERSION.version
            }

            fn describe(&self, call: &Call<'_>) -> Result<PolicyInfo, PolicyError> {
                self.run(call, |policy, store| {
                    policy.call_describe(store).map(PolicyInfo::from)
                })
            }

            fn format(
                &self,
                call: &Call<'_>,
                parts: &$crate::parts::IdParts,
            ) -> Result<Result<String, FormatError>, PolicyError> {
                self.run(call, |policy, store| {
                    let answer = policy.call_format(store, &parts.into())?;
                    Ok(answer.map_err(FormatError::from))
                })
            }

            fn format_batch(
                &self,
                call: &Call<'_>,
                prefix: &str,
                stamps: &[$crate::parts::Stamp],
            ) -> Result<Result<String, FormatError>, PolicyError> {
                self.run(call, |policy, store| {
                    let stamps: Vec<$bindings::wit::Stamp> = stamps.iter().map(Into::into).collect();
                    let answer = policy.call_format_batch(store, prefix, &stamps)?;
                    Ok(answer.map_err(FormatError::from))
                })
            }

            fn validate(
                &self,
                call: &Call<'_>,
                ids: &[&str],
                expected_prefix: Option<&str>,
                layout: Option<&$crate::parts::Layout>,
            ) -> Result<Vec<Result<$crate::parts::IdParts, InvalidId>>, PolicyError> {
                $crate::policy::contract::adapter::adapter!(@layout $layout, $bindings, layout);
                self.run(call, |policy, store| {
                    ids.iter()
                        .map(|id| {
                            let answer = $crate::policy::contract::adapter::adapter!(
                                @validate $layout, policy, store, id, expected_prefix, layout
                            )?;
                            Ok(answer.map($crate::parts::IdParts::from).map_err(InvalidId::from))
                        })
                        .collect()
                })
            }
        }
    };
    (@layout yes, $bindings:ident, $layout:ident) => {
        let $layout = $layout.map($bindings::wit::SnowflakeLayout::from);
    };
    // 0.2.0's `validate` has no layout: it is not passed.
    (@layout no, $bindings:ident, $layout:ident) => {
        let _ = $layout;
    };
    (@validate yes, $policy:ident, $store:ident, $id:ident, $prefix:ident, $layout:ident) => {
        $policy.call_validate(&mut *$store, $id, $prefix, $layout)
    };
    (@validate no, $policy:ident, $store:ident, $id:ident, $prefix:ident, $layout:ident) => {
        $policy.call_validate(&mut *$store, $id, $prefix)
    };
}
pub(crate) use adapter;
