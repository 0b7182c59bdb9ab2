#!/usr/bin/env bash
# Builds the Java client of `idmint serve` with the JDK alone (no Maven
# repository is needed): compiles clients/java/src with every lint as an
# error, packs the classes into a jar, and writes the API docs (javadoc,
# which fails on a doc mistake too).
#
#   scripts/build-java-client.sh [--tests] [OUT]
#
# OUT (default clients/java/build, which .gitignore covers) receives
# classes/, idmint-client.jar and javadoc/. With --tests, the programs under
# clients/java/test are compiled too, into OUT/test-classes, against the
# classes: the repository's tests run them from there.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
if [ "${1:-}" = "--tests" ]; then
  tests=1
  shift
fi
out="${1:-clients/java/build}"
client=clients/java
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"

for tool in javac jar javadoc; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "build-java-client: $tool not found: install a JDK 17 (scripts/tools.sh ensure_java does)" >&2
    exit 2
  }
done

rm -rf "$out/classes" "$out/test-classes" "$out/javadoc" "$out/idmint-client.jar"
mkdir -p "$out/classes"
mapfile -t sources < <(find "$client/src" -name '*.java' | sort)
javac --release 17 -Xlint:all -Werror -d "$out/classes" "${sources[@]}"

cat >"$out/MANIFEST.MF" <<MANIFEST
Automatic-Module-Name: io.idmint.client
Implementation-Title: idmint Java client
Implementation-Version: $version
MANIFEST
jar --create --file "$out/idmint-client.jar" --manifest "$out/MANIFEST.MF" -C "$out/classes" .
rm "$out/MANIFEST.MF"

javadoc -quiet -Xdoclint:all -Werror --release 17 -d "$out/javadoc" \
  -sourcepath "$client/src" io.idmint.client >/dev/null

if [ "$tests" = 1 ]; then
  mkdir -p "$out/test-classes"
  mapfile -t checks < <(find "$client/test" -name '*.java' | sort)
  # Package-private access: the checks live in the client's package, so they
  # are compiled with its sources, not against the jar.
  javac --release 17 -Xlint:all -Werror -d "$out/test-classes" "${sources[@]}" "${checks[@]}"
fi
echo "$out/idmint-client.jar"
