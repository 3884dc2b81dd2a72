# shellcheck shell=bash
# Source this (`. scripts/pulumi-env.sh`) before running pulumi offline.
#
# It puts the toolchain from scripts/ensure-pulumi first on PATH (building it
# on first use, which takes minutes; set PULUMI_DIR to skip that lookup) and
# sets what every offline, non-interactive run needs:
#
#   PULUMI_SKIP_UPDATE_CHECK=true                    no "new version" call home
#   PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true never try to download plugins;
#                                                    they come from PATH instead, so do
#                                                    NOT set PULUMI_IGNORE_AMBIENT_PLUGINS
#   PULUMI_CONFIG_PASSPHRASE                         passphrase secrets provider; a fixed
#                                                    test passphrase unless you set it (or
#                                                    PULUMI_CONFIG_PASSPHRASE_FILE)
#   PULUMI_BACKEND_URL, PULUMI_HOME                  when no backend is chosen, a file://
#                                                    backend and a Pulumi home in a fresh
#                                                    temp dir, so nothing touches ~/.pulumi
#                                                    or the Pulumi Cloud
#
# Shell options of the sourcing shell are left alone.

if [ -z "${PULUMI_DIR:-}" ]; then
    PULUMI_DIR="$(bash "$(dirname "${BASH_SOURCE[0]:-$0}")/ensure-pulumi")" || {
        echo "pulumi-env.sh: scripts/ensure-pulumi failed; see above" >&2
        return 1 2>/dev/null || exit 1
    }
    export PULUMI_DIR
fi
case ":$PATH:" in
    *":$PULUMI_DIR:"*) ;;
    *) export PATH="$PULUMI_DIR:$PATH" ;;
esac

export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true

if [ -z "${PULUMI_CONFIG_PASSPHRASE+set}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
    export PULUMI_CONFIG_PASSPHRASE="tuskr-test-passphrase"
fi

if [ -z "${PULUMI_BACKEND_URL:-}" ]; then
    TUSKR_PULUMI_TMP="$(mktemp -d "${TMPDIR:-/tmp}/pulumi-tuskr.XXXXXX")"
    mkdir -p "$TUSKR_PULUMI_TMP/state" "$TUSKR_PULUMI_TMP/home"
    export TUSKR_PULUMI_TMP # remove it when done: rm -rf "$TUSKR_PULUMI_TMP"
    export PULUMI_BACKEND_URL="file://$TUSKR_PULUMI_TMP/state"
    export PULUMI_HOME="${PULUMI_HOME:-$TUSKR_PULUMI_TMP/home}"
fi
