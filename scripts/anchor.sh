# Sourced by the scripts that run the Node anchor beside toolgauge
# (vs-ajv.sh, vs-node.sh): the anchor's files and Ajv, pinned, installed
# once into target/anchor with its workload; exports the folder as
# TOOLGAUGE_WORKLOAD_DIR so that both sides read the same inputs.
anchors=../shared/anchors
dir=target/anchor
AJV_VERSION=8.20.0

if [ ! -f "$dir/node_modules/ajv/package.json" ]; then
  mkdir -p "$dir"
  cp "$anchors"/*.js "$dir"
  (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund "ajv@$AJV_VERSION" >/dev/null)
fi
if [ ! -f "$dir/workload.json" ]; then
  (cd "$dir" && node gen_workload.js)
fi
export TOOLGAUGE_WORKLOAD_DIR="$PWD/$dir"
