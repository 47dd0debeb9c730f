# Locates a JDK 25 or newer for Strata's build and launcher.
# Sourced by ./mvnw, ./strata and .ci/run. On success JAVA_HOME names the JDK;
# on failure it prints one line naming the fix and returns 1.

strata_java_major() {
  # Prints the feature release of the JDK at $1 (for example 25), or nothing.
  local home=$1 version
  [ -x "$home/bin/javac" ] || return 0
  if [ -f "$home/release" ]; then
    version=$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$home/release")
  fi
  if [ -z "$version" ]; then
    version=$("$home/bin/java" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1)
  fi
  version=${version#1.}
  echo "${version%%[.+-]*}"
}

strata_find_jdk() {
  local candidate major
  # STRATA_JDK_ROOTS overrides where installed JDKs are looked for (space-separated globs).
  local roots=${STRATA_JDK_ROOTS:-"/usr/lib/jvm/* /opt/java/* /opt/jdk* $HOME/.sdkman/candidates/java/* $HOME/.jdks/*"}
  # shellcheck disable=SC2086
  for candidate in "${STRATA_JAVA_HOME:-}" "${JAVA_HOME:-}" $roots; do
    [ -n "$candidate" ] && [ -d "$candidate" ] || continue
    major=$(strata_java_major "$candidate")
    if [ -n "$major" ] && [ "$major" -ge 25 ] 2>/dev/null; then
      JAVA_HOME=$(cd "$candidate" && pwd -P)
      export JAVA_HOME
      return 0
    fi
  done
  echo "strata: no JDK 25 found (looked at \$JAVA_HOME and /usr/lib/jvm); install one, e.g. 'apt-get install temurin-25-jdk', or set JAVA_HOME to a JDK 25" >&2
  return 1
}
