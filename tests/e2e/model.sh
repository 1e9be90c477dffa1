#!/usr/bin/env bash
# A trained model read from outside ringside: train on synthetic data (an MSE model with SiLU
# and a BCE model with ReLU), predict on other data with the features, and check with Python
# (torch, numpy, onnx) that the safetensors file rebuilt as an nn.Sequential reproduces the
# predictions, and that the ONNX export is valid and computes the same. Also the exports'
# and predict's refusals of bad input.
#
# usage: model.sh RINGSIDE SCRATCH_DIR [PYTHON]    (PYTHON: default /usr/bin/python3)
# Exit 77 (skipped) when PYTHON lacks torch, numpy or onnx.
set -euo pipefail
R=$1
S=$2
PY=${3:-${RS_PYTHON:-/usr/bin/python3}}
HERE=$(cd "$(dirname "$0")" && pwd)
if ! "$PY" -c 'import torch, numpy, onnx' 2> /dev/null; then
    echo "model: $PY cannot import torch, numpy and onnx (python3-torch, python3-onnx): skipped"
    exit 77
fi
rm -rf "$S"
mkdir -p "$S"
cd "$S"
fail() {
    echo "model: FAILED: $*" >&2
    exit 1
}

"$R" synth --days 8 --seed 3 --out train.csv > /dev/null 2>&1
"$R" synth --days 4 --seed 11 --out new.csv > /dev/null 2>&1
for variant in "mse silu 32,16" "bce relu 24"; do
    set -- $variant
    name=m_$1
    "$R" train --headless --jsonl /dev/null --backend cpu --data train.csv --epochs 2 \
        --loss "$1" --activation "$2" --hidden "$3" --output out --name "$name" ||
        fail "training the $1 model"
    "$R" predict --model "out/$name.rsmodel" --data new.csv --features --backend cpu \
        --out "$name.jsonl" || fail "predict ($1)"
    "$R" export --format onnx "out/$name.rsmodel" --out "$name.onnx" || fail "export onnx ($1)"
    "$R" export --format safetensors --model "out/$name.rsmodel" --out "$name.safetensors" ||
        fail "export safetensors ($1)"
    cmp -s "$name.safetensors" "out/$name.safetensors" ||
        fail "the exported safetensors differs from the checkpoint's"
    "$PY" "$HERE/check_model.py" "out/$name.safetensors" "$name.jsonl" --onnx "$name.onnx" ||
        fail "the $1 model outside ringside"
done

# The vendors' exports of the same bars: a model trained on a Databento file of two instruments
# (--symbol) predicts as the one trained on the plain file (without VIX, as Databento's has
# none), and a NinjaTrader file (headerless, semicolons, each bar stamped with its end, in UTC:
# --tz UTC) gets the predictions its bars get as plain CSV.
awk -F, 'NR == 1 { print "ts_event,rtype,publisher_id,instrument_id,open,high,low,close,volume,symbol"; next }
    { t = $1; sub(" ", "T", t); for (s = 0; s < 2; s++)
        printf "%s.000000000Z,33,1,%d,%s,%s,%s,%s,%s,%s\n", t, 100 + s, $2, $3, $4, $5, $6,
            s ? "ESM4" : "ESH4" }' train.csv > databento.csv
cut -d, -f1-6 train.csv > train_novix.csv
cut -d, -f1-6 new.csv > novix.csv
"$PY" -c '
import csv, sys
from datetime import datetime, timedelta
rows = csv.reader(open(sys.argv[1]))
next(rows)
for r in rows:
    end = datetime.strptime(r[0], "%Y-%m-%d %H:%M:%S") + timedelta(minutes=1)
    print(end.strftime("%Y%m%d %H%M%S") + ";" + ";".join(r[1:6]))
' new.csv > ninja.txt
"$R" train --headless --jsonl /dev/null --backend cpu --data databento.csv --symbol ESH4 \
    --epochs 2 --output out --name m_dbn > /dev/null 2>&1 || fail "training on Databento's CSV"
"$R" train --headless --jsonl /dev/null --backend cpu --data train_novix.csv --epochs 2 \
    --output out --name m_plain > /dev/null 2>&1 || fail "training on the plain file"
"$R" predict --model out/m_dbn.rsmodel --data ninja.txt --tz UTC > ninja.jsonl ||
    fail "predict on NinjaTrader's export"
"$R" predict --model out/m_dbn.rsmodel --data novix.csv > novix.jsonl
"$R" predict --model out/m_plain.rsmodel --data novix.csv > plain.jsonl
cmp -s novix.jsonl plain.jsonl || fail "the Databento file's model is not the plain file's"
cmp -s ninja.jsonl novix.jsonl || fail "NinjaTrader's file predicts differently"
"$R" predict --model out/m_dbn.rsmodel --data ninja.txt --tz UTC --features > ninja_x.jsonl
"$PY" "$HERE/check_model.py" out/m_dbn.safetensors ninja_x.jsonl --onnx <(
    "$R" export --format onnx out/m_dbn.rsmodel --out /dev/stdout) ||
    fail "the Databento model outside ringside"

# One line a bar after the first session; CSV has the same rows under a header.
bars=$(($(wc -l < new.csv) - 1))
first=$(awk -F, 'NR == 2 { print substr($1, 1, 10) }' new.csv)
lines=$(wc -l < m_mse.jsonl)
[ "$lines" -gt 0 ] && [ "$lines" -lt "$bars" ] || fail "$lines predictions for $bars bars"
"$R" predict --model out/m_mse.rsmodel --data new.csv --csv > p.csv || fail "predict --csv"
[ "$(head -n 1 p.csv)" = "time,session,output,return_bps,actual_bps" ] || fail "CSV header"
[ $(($(wc -l < p.csv) - 1)) -eq "$lines" ] || fail "CSV rows"
grep -q '"actual_bps":null' m_mse.jsonl || fail "the last bars' actual return is not null"
grep -q "\"session\":\"$first\"" m_mse.jsonl && fail "the first session was predicted"

# Refusals: exit 2 and one line naming the problem.
expect2() {
    local want=$1
    shift
    local rc=0
    "$@" > /dev/null 2> err.txt || rc=$?
    [ "$rc" -eq 2 ] || fail "'$*' exited $rc, not 2"
    [ "$(wc -l < err.txt)" -eq 1 ] && grep -q -- "$want" err.txt ||
        fail "'$*': expected '$want' in: $(cat err.txt)"
}
cp out/m_mse.rsmodel lone.rsmodel
expect2 "lone_metadata.json: not found" "$R" predict --model lone.rsmodel --data new.csv
expect2 "lone_metadata.json: not found" "$R" export --format onnx lone.rsmodel --out x.onnx
expect2 "not a ringside checkpoint" "$R" predict --model new.csv --data new.csv
expect2 "is not one of onnx, safetensors" "$R" export --format pt out/m_mse.rsmodel --out x
expect2 "one checkpoint at a time" "$R" export --format onnx a.rsmodel b.rsmodel --out x
expect2 "--data FILE is required" "$R" predict --model out/m_mse.rsmodel
mkdir -p outdir # --out naming a directory: refused before the work, status 2
expect2 "outdir: is a directory" "$R" predict --model out/m_mse.rsmodel --data new.csv --out outdir
expect2 "outdir: is a directory" "$R" export --format onnx out/m_mse.rsmodel --out outdir
expect2 "outdir: is a directory" "$R" export --format safetensors out/m_mse.rsmodel --out outdir
head -n 200 new.csv > one_session.csv
expect2 "a prediction needs the session before it" \
    "$R" predict --model out/m_mse.rsmodel --data one_session.csv --out never.jsonl
[ ! -e never.jsonl ] || fail "a failed predict left its --out file"
sed 's/"tick":0.25/"tick":-1/' out/m_mse_metadata.json > bad_metadata.json
cp out/m_mse.rsmodel bad.rsmodel
expect2 "config.tick" "$R" predict --model bad.rsmodel --data new.csv
[ ! -e x.onnx ] || fail "a refused export wrote its file"
echo "model: ok"
