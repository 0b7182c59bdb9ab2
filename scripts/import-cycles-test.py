#!/usr/bin/env python3
"""The import-cycle check (scripts/import-cycles.py) against planted crates:
each case writes a small src/ tree and names the cycles the check must
report, none more. Run by scripts/test.sh before the check itself."""
import importlib.util
import io
import os
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('import_cycles', os.path.join(HERE, 'import-cycles.py'))
import_cycles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(import_cycles)


def check(files):
    """The cycles the check reports in a crate made of `files` (path ->
    source), each a sorted list of paths."""
    with tempfile.TemporaryDirectory() as root:
        for path, source in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, 'w') as f:
                f.write(textwrap.dedent(source))
        return import_cycles.cycles(root, out=io.StringIO())


class PlantedCycles(unittest.TestCase):
    def test_super_in_a_leaf_file_is_its_parent(self):
        # `super` of a/b.rs is `a`, not the crate root.
        found = check({
            'lib.rs': 'mod a;\n',
            'a/mod.rs': 'mod b;\nmod c;\n',
            'a/b.rs': 'use super::c::Y;\npub struct X;\n',
            'a/c.rs': 'use super::b::X;\npub struct Y;\n',
        })
        self.assertEqual(found, [['a/b.rs', 'a/c.rs']])

    def test_a_use_group_imports_each_of_its_paths(self):
        found = check({
            'lib.rs': 'mod b;\nmod c;\nmod d;\n',
            'b.rs': 'use super::{d, c::Y};\npub struct X;\n',
            'c.rs': 'use crate::{d::Z, b::{X as Renamed}};\npub struct Y;\n',
            'd.rs': 'pub struct Z;\n',
        })
        self.assertEqual(found, [['b.rs', 'c.rs']])

    def test_a_name_imported_from_a_facade_leads_to_its_file(self):
        # x.rs imports Thing through m's re-export: the edge goes to
        # m/inner.rs, which imports x.rs back.
        found = check({
            'lib.rs': 'mod m;\nmod x;\n',
            'm/mod.rs': 'mod inner;\npub use inner::Thing;\n',
            'm/inner.rs': 'pub struct Thing(crate::x::Other);\n',
            'x.rs': 'use crate::m::Thing;\npub struct Other;\nfn f(_: Thing) {}\n',
        })
        self.assertEqual(found, [['m/inner.rs', 'x.rs']])

    def test_a_glob_re_export_leads_to_the_file_that_defines_the_name(self):
        found = check({
            'lib.rs': 'mod m;\nmod x;\n',
            'm/mod.rs': 'mod inner;\nmod other;\npub use inner::*;\npub use other::*;\n',
            'm/inner.rs': 'pub fn thing() { crate::x::other() }\n',
            'm/other.rs': 'pub fn unrelated() {}\n',
            'x.rs': 'pub fn other() { crate::m::thing() }\n',
        })
        self.assertEqual(found, [['m/inner.rs', 'x.rs']])

    def test_a_name_imported_through_a_leaf_file_imports_that_file(self):
        # roles.rs names items.rs, which only re-exports the name: still an
        # import of items.rs, which imports roles.rs.
        found = check({
            'lib.rs': 'mod installer;\nmod collections;\n',
            'collections.rs': 'pub const MANIFEST: &str = "m";\n',
            'installer/mod.rs': 'mod items;\nmod roles;\n',
            'installer/items.rs': 'pub use crate::collections::MANIFEST as NAME;\nuse super::roles::R;\n',
            'installer/roles.rs': 'use super::items::NAME;\npub struct R;\n',
        })
        self.assertEqual(found, [['installer/items.rs', 'installer/roles.rs']])

    def test_a_parent_that_calls_a_child_calling_it_back_is_a_cycle(self):
        found = check({
            'lib.rs': 'mod m;\n',
            'm/mod.rs': 'mod child;\npub fn helper() {}\nfn run() { child::work() }\n',
            'm/child.rs': 'pub fn work() { super::helper() }\n',
        })
        self.assertEqual(found, [['m/child.rs', 'm/mod.rs']])

    def test_a_facade_using_a_name_it_re_exports_imports_its_file(self):
        # mod.rs re-exports Handle and uses it in its own code: that use
        # imports handle.rs, which imports mod.rs back.
        found = check({
            'lib.rs': 'mod m;\n',
            'm/mod.rs': 'mod handle;\npub use handle::Handle;\npub struct Kind;\n'
                        'impl Kind { fn open() -> Handle { Handle } }\n',
            'm/handle.rs': 'pub struct Handle;\nimpl Handle { fn of(_: super::Kind) {} }\n',
        })
        self.assertEqual(found, [['m/handle.rs', 'm/mod.rs']])

    def test_paths_in_expressions_count_and_super_super_climbs_twice(self):
        found = check({
            'lib.rs': 'mod a;\nmod top;\n',
            'a/mod.rs': 'mod b;\n',
            'a/b.rs': 'fn f() { super::super::top::g() }\npub fn h() {}\n',
            'top.rs': 'pub fn g() { crate::a::b::h() }\n',
        })
        self.assertEqual(found, [['a/b.rs', 'top.rs']])

    def test_a_path_through_a_module_a_use_binds_leads_to_its_file(self):
        # registry.rs names kinds/cyclic.rs only as `kinds::cyclic::...`
        # after `use super::kinds;`: the cycle exists only through that name.
        found = check({
            'lib.rs': 'mod sequence;\n',
            'sequence/mod.rs': 'mod kinds;\nmod registry;\n',
            'sequence/kinds/mod.rs': 'pub mod cyclic;\n',
            'sequence/kinds/cyclic.rs': 'pub struct CyclicKind;\n'
                                        'impl CyclicKind { fn f() { crate::sequence::registry::list() } }\n',
            'sequence/registry.rs': 'use super::kinds;\npub fn list() {}\n'
                                    'type Cyclic = kinds::cyclic::CyclicKind;\n',
        })
        self.assertEqual(found, [['sequence/kinds/cyclic.rs', 'sequence/registry.rs']])

    def test_self_in_a_use_group_binds_the_module(self):
        found = check({
            'lib.rs': 'mod lease;\nmod mongo;\n',
            'lease.rs': 'use crate::mongo::{self, durable};\npub struct Lease;\n'
                        'fn f() { durable(); mongo::collections::create() }\n',
            'mongo/mod.rs': 'pub mod collections;\npub fn durable() {}\n',
            'mongo/collections.rs': 'pub fn create() {}\nfn g(_: crate::lease::Lease) {}\n',
        })
        self.assertEqual(found, [['lease.rs', 'mongo/collections.rs']])

    def test_a_module_bound_by_use_leads_through_its_re_exports(self):
        # `snowflake::SnowflakeKind` names the facade snowflake/mod.rs, which
        # re-exports it from snowflake/kind.rs: the edge goes there.
        found = check({
            'lib.rs': 'mod kinds;\nmod registry;\n',
            'kinds/mod.rs': 'pub mod snowflake;\n',
            'kinds/snowflake/mod.rs': 'mod kind;\npub use kind::SnowflakeKind;\n',
            'kinds/snowflake/kind.rs': 'pub struct SnowflakeKind(crate::registry::Registry);\n',
            'registry.rs': 'use super::kinds::snowflake;\npub struct Registry;\n'
                           'type S = snowflake::SnowflakeKind;\n',
        })
        self.assertEqual(found, [['kinds/snowflake/kind.rs', 'registry.rs']])

    def test_a_module_renamed_by_use_as_is_bound_to_its_file(self):
        for use in ('use crate::store as db;', 'use crate::store::{self as db};'):
            with self.subTest(use=use):
                found = check({
                    'lib.rs': 'mod store;\nmod x;\n',
                    'store/mod.rs': 'pub mod open;\n',
                    'store/open.rs': 'pub fn open() { crate::x::g() }\n',
                    'x.rs': use + '\npub fn g() {}\nfn f() { db::open::open() }\n',
                })
                self.assertEqual(found, [['store/open.rs', 'x.rs']])

    def test_a_use_path_may_start_with_a_name_another_use_binds(self):
        found = check({
            'lib.rs': 'mod kinds;\nmod registry;\n',
            'kinds/mod.rs': 'pub mod cyclic;\n',
            'kinds/cyclic.rs': 'pub struct CyclicKind(crate::registry::Registry);\n',
            'registry.rs': 'use crate::kinds;\nuse kinds::cyclic::CyclicKind;\npub struct Registry;\n',
        })
        self.assertEqual(found, [['kinds/cyclic.rs', 'registry.rs']])


class NoCycle(unittest.TestCase):
    def test_a_facade_listing_its_children_is_not_a_cycle(self):
        found = check({
            'lib.rs': 'mod m;\npub use m::{Thing, Other};\n',
            'm/mod.rs': 'mod inner;\nmod other;\npub use inner::Thing;\npub(crate) use other::Other;\n',
            'm/inner.rs': 'use super::Other;\npub struct Thing(Other);\n',
            'm/other.rs': 'pub struct Other;\n',
        })
        self.assertEqual(found, [])

    def test_a_facade_re_exporting_a_name_its_child_module_has_is_not_a_cycle(self):
        # `mod check;` declares the module; `check` the function is only
        # re-exported, not used by the facade's own code.
        found = check({
            'lib.rs': 'mod m;\n',
            'm/mod.rs': 'mod check;\nmod other;\npub use check::check;\npub fn helper() {}\n',
            'm/check.rs': 'pub fn check() { super::helper() }\n',
            'm/other.rs': 'pub fn other() {}\n',
        })
        self.assertEqual(found, [])

    def test_comments_strings_and_test_modules_are_not_imports(self):
        found = check({
            'lib.rs': 'mod a;\nmod b;\n',
            'a.rs': '''\
                // use crate::b::B;
                /* crate::b::B */
                /// See [`crate::b::B`].
                pub struct A;
                const S: &str = "crate::b::B";
                const R: &str = r#"crate::b::B"#;
                const C: char = '"';
                fn f<'a>(x: &'a str) -> &'a str { x }
                #[cfg(test)]
                mod tests {
                    use crate::b::B;
                }
                ''',
            'b.rs': 'use crate::a::A;\npub struct B(A);\n',
        })
        self.assertEqual(found, [])

    def test_other_crates_are_not_this_crates_files(self):
        found = check({
            'lib.rs': 'mod a;\nmod serde;\n',
            'a.rs': 'use serde::Serialize;\nuse std::fmt;\npub struct A;\n',
            'serde.rs': 'use crate::a::A;\n',
        })
        # `use serde::...` in a.rs (a leaf: no child named serde) is the
        # external crate, not crate::serde.
        self.assertEqual(found, [])

    def test_a_name_bound_to_an_item_is_not_a_module(self):
        # `kinds` here is the enum a::Mode, not the module crate::kinds
        # (which x.rs, a leaf, could only name as crate::kinds).
        found = check({
            'lib.rs': 'mod a;\nmod kinds;\nmod x;\n',
            'a.rs': 'pub enum Mode { Fast }\n',
            'kinds.rs': 'pub struct Fast;\nfn f() { crate::x::g() }\n',
            'x.rs': 'use crate::a::Mode as kinds;\npub fn g() {}\n'
                    'fn h() { let _ = kinds::Fast; }\n',
        })
        self.assertEqual(found, [])

    def test_a_module_of_another_crate_bound_by_use_is_not_this_crates(self):
        # `de` and `snowflake` name modules of other crates, whatever
        # modules of this crate share their names.
        found = check({
            'lib.rs': 'mod de;\nmod snowflake;\nmod x;\n',
            'de.rs': 'pub struct Error(crate::x::X);\n',
            'snowflake.rs': 'pub struct Kind(crate::x::X);\n',
            'x.rs': 'use serde::de;\nuse idmint::sequence::{self as snowflake};\npub struct X;\n'
                    'fn f(_: de::Error, _: snowflake::Kind) {}\n',
        })
        self.assertEqual(found, [])

    def test_a_name_a_use_binds_is_bound_in_its_own_file_only(self):
        # a.rs binds `kinds`; b.rs does not, so its `kinds::` is another
        # crate, and `other::kinds::` in a.rs is a path into another crate.
        found = check({
            'lib.rs': 'mod a;\nmod b;\nmod kinds;\n',
            'kinds/mod.rs': 'pub mod cyclic;\n',
            'kinds/cyclic.rs': 'pub fn f() { crate::a::g(); crate::b::g() }\n',
            'a.rs': 'use crate::kinds;\npub fn g() { other::kinds::cyclic::f() }\n'
                    'fn h(_: &kinds::Kind) {}\n',
            'b.rs': 'pub fn g() { kinds::cyclic::f() }\n',
        })
        self.assertEqual(found, [])


if __name__ == '__main__':
    unittest.main()
