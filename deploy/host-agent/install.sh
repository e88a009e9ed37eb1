#!/bin/sh
# Installs (or upgrades) the Ark host agent on a Linux rig with systemd and Docker.
#
#   sudo sh deploy/host-agent/install.sh [SOURCE]
#
# SOURCE is the agent's npm package (ark-agent-<version>.tgz, from `pnpm pack` in a source tree: one
# bundled file, nothing to build, no pnpm), an Ark source tree, or a .tar.gz/.tgz of one; by default
# the tree this script is in.
# Re-running upgrades the code in place; configuration and state are kept.
# With DESTDIR=/some/dir the files are staged under it and the machine is left alone (no root
# needed, no user, ownership or systemd changes): for packaging and for testing this script.
set -eu

PNPM_VERSION=9.15.9
NODE_MAJOR_MIN=20
AGENT_USER=ark-agent
DESTDIR="${DESTDIR:-}"
# Final locations, as the running system sees them.
PREFIX=/opt/ark-agent
BIN=/usr/local/bin/ark-agent
CONFIG_DIR=/etc/ark-agent
STATE_DIR=/var/lib/ark-agent
UNIT_DIR=/etc/systemd/system

umask 022

say() { printf 'ark-agent install: %s\n' "$*"; }
die() {
  printf 'ark-agent install: error: %s\n' "$*" >&2
  exit 1
}
# Commands that change the machine rather than files; skipped when staging into DESTDIR.
on_system() { [ -z "$DESTDIR" ]; }

# --- checks -----------------------------------------------------------------------------------
if on_system && [ "$(id -u)" -ne 0 ]; then
  die "run as root: sudo sh $0 ${1:-}"
fi
command -v node >/dev/null 2>&1 || die "Node.js ${NODE_MAJOR_MIN} or newer is required (https://nodejs.org or your distribution's nodejs)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge "$NODE_MAJOR_MIN" ] || die "Node.js ${NODE_MAJOR_MIN} or newer is required, found $(node --version)"
command -v tar >/dev/null 2>&1 || die "tar is required"
if on_system; then
  command -v docker >/dev/null 2>&1 || die "Docker is required (Debian: apt-get install docker.io)"
  docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "the Docker engine is not answering: start it (systemctl start docker) and retry"
  getent group docker >/dev/null 2>&1 || die "there is no docker group: the agent's user needs it to reach /run/docker.sock"
  command -v systemctl >/dev/null 2>&1 || die "systemd is required to run the agent as a service"
fi

# --- source -----------------------------------------------------------------------------------
script_dir=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
source_arg="${1:-$script_dir/../..}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

package_tgz=""
if [ -f "$source_arg" ] && tar -tzf "$source_arg" 2>/dev/null | grep -qx 'package/dist/ark-agent.mjs'; then
  # The npm package: installed as it is, below.
  package_tgz=$(CDPATH='' cd -- "$(dirname -- "$source_arg")" && pwd)/$(basename -- "$source_arg")
elif [ -f "$source_arg" ]; then
  case "$source_arg" in
    *.tar.gz | *.tgz) ;;
    *) die "$source_arg is not a .tar.gz or .tgz" ;;
  esac
  mkdir "$work/source"
  tar -xzf "$source_arg" -C "$work/source"
  source_dir="$work/source"
  # A tarball made from the parent folder holds the tree one level down.
  if [ ! -f "$source_dir/pnpm-workspace.yaml" ]; then
    for entry in "$source_dir"/*; do
      if [ -f "$entry/pnpm-workspace.yaml" ]; then
        source_dir="$entry"
        break
      fi
    done
  fi
elif [ -d "$source_arg" ]; then
  source_dir=$(CDPATH='' cd -- "$source_arg" && pwd)
else
  die "no such source: $source_arg"
fi
if [ -z "$package_tgz" ] && { [ ! -f "$source_dir/pnpm-workspace.yaml" ] || [ ! -f "$source_dir/host-agent/package.json" ]; }; then
  die "$source_dir is not an Ark source tree (no pnpm-workspace.yaml or host-agent/)"
fi

# --- code -------------------------------------------------------------------------------------
# Built beside the live copy and swapped in at the end, so a failed install leaves the running
# agent untouched.
staging="$DESTDIR$PREFIX.new"
rm -rf "$staging"
mkdir -p "$staging"
if [ -n "$package_tgz" ]; then
  say "installing $(basename -- "$package_tgz") into $PREFIX"
  # The package carries every dependency it imports: no registry, no build.
  npm install --global --prefix "$staging" --offline --no-audit --no-fund --no-update-notifier "$package_tgz" >/dev/null ||
    die "npm install of $package_tgz failed"
  agent_entry="$PREFIX/lib/node_modules/ark-agent/dist/ark-agent.mjs"
  deploy_dir="$PREFIX/lib/node_modules/ark-agent/deploy"
  (node "$staging/lib/node_modules/ark-agent/dist/ark-agent.mjs" help >/dev/null) || die "the packaged agent does not start"
else
  say "copying $source_dir to $PREFIX"
  (cd "$source_dir" && tar --exclude=./.git --exclude=./node_modules --exclude='./*/node_modules' --exclude=./data -cf - .) |
    (cd "$staging" && tar -xf -)

  if [ "$(pnpm --version 2>/dev/null || true)" = "$PNPM_VERSION" ]; then
    run_pnpm() { pnpm "$@"; }
  else
    # A one-off pnpm of the pinned version; nothing is installed globally.
    run_pnpm() { npm exec --yes --package="pnpm@$PNPM_VERSION" -- pnpm "$@"; }
  fi

  # Native addons build against this Node's headers, wherever this Node is installed.
  node_prefix=$(node -p 'require("node:path").resolve(process.execPath, "..", "..")')
  if [ -f "$node_prefix/include/node/node.h" ]; then
    npm_config_nodedir="$node_prefix"
    export npm_config_nodedir
  fi

  say "installing dependencies (pnpm $PNPM_VERSION)"
  # Only the agent and what it imports (shared), plus the root for tsx: its esbuild builds the bundle
  # below, and bin/ark-agent.mjs falls back to running the sources through it. tsx is a root
  # devDependency, hence --prod=false; the control plane is left out.
  (cd "$staging" && CI=true run_pnpm install --frozen-lockfile --prod=false --filter ark --filter '@ark/host-agent...') ||
    die "pnpm install failed"

  # The agent runs as one bundled file on plain Node (about 30 MB less than through tsx). Built now,
  # after the copy, so it is newer than every source: the service cannot write under $PREFIX at run
  # time, and bin/ark-agent.mjs would otherwise fall back to tsx.
  say "bundling the agent"
  (cd "$staging" && node host-agent/scripts/bundle.mjs >/dev/null) || die "bundling the agent failed"
  # Loading it for `help` evaluates every module, so a missing dependency fails here, not in the service.
  (cd "$staging" && ARK_AGENT_FROM_SOURCE='' node host-agent/bin/ark-agent.mjs help >/dev/null) ||
    die "the bundled agent does not start"
  agent_entry="$PREFIX/host-agent/bin/ark-agent.mjs"
  deploy_dir="$PREFIX/deploy/host-agent"
fi
node_bin=$(command -v node)

if [ -d "$DESTDIR$PREFIX" ]; then
  rm -rf "$DESTDIR$PREFIX.old"
  mv "$DESTDIR$PREFIX" "$DESTDIR$PREFIX.old"
fi
mv "$staging" "$DESTDIR$PREFIX"
rm -rf "$DESTDIR$PREFIX.old"

# --- wrapper ----------------------------------------------------------------------------------
mkdir -p "$DESTDIR$(dirname "$BIN")"
cat >"$DESTDIR$BIN" <<EOF
#!/bin/sh
# The Ark host agent CLI (run, pair, ...). Written by deploy/host-agent/install.sh.
set -eu
: "\${ARK_AGENT_STATE_DIR:=$STATE_DIR}"
: "\${ARK_AGENT_CONFIG:=$CONFIG_DIR/config.json}"
export ARK_AGENT_STATE_DIR ARK_AGENT_CONFIG
# Run by root (an operator pairing the rig), switch to the service's user first so whatever the
# agent writes in its state directory stays readable by the service.
if [ "\$(id -u)" -eq 0 ] && id $AGENT_USER >/dev/null 2>&1; then
  exec setpriv --reuid=$AGENT_USER --regid=$AGENT_USER --init-groups -- "\$0" "\$@"
fi
exec "$node_bin" "$agent_entry" "\$@"
EOF
chmod 0755 "$DESTDIR$BIN"

# --- user, configuration, state ---------------------------------------------------------------
if on_system; then
  if ! id "$AGENT_USER" >/dev/null 2>&1; then
    say "creating system user $AGENT_USER"
    useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home --shell /usr/sbin/nologin "$AGENT_USER"
  fi
  usermod --append --groups docker "$AGENT_USER"
fi

mkdir -p "$DESTDIR$CONFIG_DIR" "$DESTDIR$STATE_DIR"
chmod 0750 "$DESTDIR$CONFIG_DIR"
chmod 0700 "$DESTDIR$STATE_DIR"
config_file="$DESTDIR$CONFIG_DIR/config.json"
if [ ! -e "$config_file" ]; then
  say "writing an example configuration to $CONFIG_DIR/config.json"
  cp "$DESTDIR$deploy_dir/config.example.json" "$config_file"
  chmod 0600 "$config_file"
  if on_system; then chown "$AGENT_USER:$AGENT_USER" "$config_file"; fi
fi
if on_system; then
  chown "root:$AGENT_USER" "$CONFIG_DIR"
  chown "$AGENT_USER:$AGENT_USER" "$STATE_DIR"
fi

# --- service ----------------------------------------------------------------------------------
mkdir -p "$DESTDIR$UNIT_DIR"
cp "$DESTDIR$deploy_dir/ark-agent.service" "$DESTDIR$UNIT_DIR/ark-agent.service"
chmod 0644 "$DESTDIR$UNIT_DIR/ark-agent.service"
if on_system; then
  # daemon-reload needs a running systemd; enable works without one (e.g. in an image build).
  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
  systemctl enable ark-agent.service >/dev/null 2>&1 || die "systemctl enable ark-agent.service failed"
  if systemctl is-active --quiet ark-agent.service 2>/dev/null; then
    systemctl restart ark-agent.service
    say "restarted the running agent with the new code"
  fi
fi

if on_system; then
  say "installed the agent in $PREFIX and enabled ark-agent.service"
else
  say "staged the agent under $DESTDIR (nothing on this machine was enabled)"
fi
cat <<EOF

Next: pair this rig with your control plane, then start the agent:

  sudo ark-agent pair --control-plane https://YOUR-CONTROL-PLANE
  sudo systemctl start ark-agent

Settings: $CONFIG_DIR/config.json   State: $STATE_DIR   Logs: journalctl -u ark-agent
EOF
