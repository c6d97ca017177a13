#!/usr/bin/env bash
# grpo-launch status / events / report on a recorded run directory: exit codes, filters, formats.
set -uo pipefail
bin=$1
sample=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$sample" "$tmp/run"
failures=0
check() { if ! eval "$1"; then echo "FAIL: $2"; failures=$((failures + 1)); fi; }

out=$("$bin" status "$tmp/run"); rc=$?
check '[[ $rc -eq 0 ]]' "status exit $rc"
check 'grep -q "succeeded (exit 0)" <<<"$out"' "status shows the final state"
check 'grep -q "restarts 1" <<<"$out"' "status shows the restart"
check 'grep -q "crash 1" <<<"$out"' "status shows the failure class"
check 'grep -q "effective" <<<"$out"' "status shows the effective-training-time ratio"
"$bin" status "$tmp/run" --format json >"$tmp/s.json"
check 'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j[\"state\"]==\"succeeded\" and j[\"restarts\"]==1 and j[\"attempt\"]==2 and j[\"expert_imbalance_events\"]==1" "$tmp/s.json"' "status json"

n=$("$bin" events "$tmp/run" --type failure | wc -l)
check '[[ $n -eq 1 ]]' "events --type failure printed $n lines"
n=$("$bin" events "$tmp/run" --type failure,decision --format json | python3 -c 'import json,sys; print(sum(1 for l in sys.stdin if json.loads(l)["type"] in ("failure","decision")))')
check '[[ $n -eq 2 ]]' "events json filter gave $n"
total=$("$bin" events "$tmp/run" --format json | wc -l)
check '[[ $total -eq $(wc -l <"$tmp/run/events.jsonl") ]]' "events prints every event ($total)"
timeout 20 "$bin" events "$tmp/run" --follow --type run_finished >"$tmp/f.txt"; rc=$?
check '[[ $rc -eq 0 ]] && grep -q run_finished "$tmp/f.txt"' "events --follow stops after run_finished (rc $rc)"

"$bin" report "$tmp/run" -o "$tmp/r.html" >/dev/null; rc=$?
check '[[ $rc -eq 0 && -s $tmp/r.html ]]' "report writes the file"
out=$(cd "$tmp" && "$bin" report run run); rc=$?
check '[[ $rc -eq 0 && -s $tmp/compare-report.html ]] && grep -q "4 charts (4 with data) comparing 2 runs" <<<"$out"' "report RUN RUN overlays them (rc $rc)"
"$bin" report "$tmp/run" "$tmp/run" "$tmp/run" "$tmp/run" "$tmp/run" "$tmp/run" -o "$tmp/six.html" 2>"$tmp/six.err"; rc=$?
check '[[ $rc -eq 64 && ! -e $tmp/six.html ]] && grep -q "at most 5 runs" "$tmp/six.err"' "report of six runs is a usage error (rc $rc)"
"$bin" report "$tmp/run" "$tmp/nope" -o "$tmp/nope.html" 2>/dev/null; rc=$?
check '[[ $rc -eq 2 && ! -e $tmp/nope.html ]]' "report with a missing run exits 2 (rc $rc)"

# A run that is still going: events appended while --follow runs are printed.
mkdir "$tmp/live"; head -n 20 "$tmp/run/events.jsonl" >"$tmp/live/events.jsonl"
( timeout 20 "$bin" events "$tmp/live" --follow --format json >"$tmp/live.out" ) &
follower=$!
sleep 1.5
tail -n +21 "$tmp/run/events.jsonl" >>"$tmp/live/events.jsonl"
wait $follower; rc=$?
check '[[ $rc -eq 0 && $(wc -l <"$tmp/live.out") -eq $(wc -l <"$tmp/run/events.jsonl") ]]' "events --follow picks up appended events (rc $rc)"

# Bad targets: exit 2 with one line.
"$bin" status "$tmp/nope" 2>"$tmp/err"; rc=$?
check '[[ $rc -eq 2 && $(wc -l <"$tmp/err") -eq 1 ]]' "status on a missing directory: exit $rc"
mkdir "$tmp/empty"
"$bin" status "$tmp/empty" 2>"$tmp/err"; rc=$?
check '[[ $rc -eq 2 ]] && grep -q "not a run directory" "$tmp/err"' "status on a non-run directory: exit $rc"
(cd "$tmp" && SLURM_CONF=/nonexistent "$bin" status 424242 2>"$tmp/err"); rc=$?
check '[[ $rc -eq 2 ]] && grep -q "job 424242" "$tmp/err"' "status on an unknown job id: exit $rc"
# A job id found through <runs>/*/job.json.
mkdir -p "$tmp/runs/r1" && cp "$tmp/run/events.jsonl" "$tmp/runs/r1/" && echo '{"job_id": 77}' >"$tmp/runs/r1/job.json"
out=$(cd "$tmp" && SLURM_CONF=/nonexistent "$bin" status 77); rc=$?
check '[[ $rc -eq 0 ]] && grep -q "runs/r1" <<<"$out"' "status by job id via job.json (rc $rc)"
printf '{"type":"state","seq":0}\nnot json\n' >"$tmp/empty/events.jsonl"
"$bin" events "$tmp/empty" 2>"$tmp/err"; rc=$?
check '[[ $rc -eq 2 ]] && grep -q "events.jsonl:2" "$tmp/err"' "a corrupt log names its line (rc $rc)"

# A directory of runs: one line per run directory (others are skipped), and the same as JSON.
mkdir -p "$tmp/many/not-a-run"
cp -r "$sample" "$tmp/many/a-done"
cp -r "$tmp/live" "$tmp/many/b-live"
out=$("$bin" status "$tmp/many"); rc=$?
check '[[ $rc -eq 0 && $(wc -l <<<"$out") -eq 3 ]]' "status DIR: header and 2 runs (rc $rc): $out"
check 'grep -q "^a-done  *succeeded " <<<"$out"' "status DIR shows the finished run's state: $out"
check 'grep -q "^b-live " <<<"$out"' "status DIR lists the live run: $out"
"$bin" status "$tmp/many" --format json >"$tmp/many.json"
check 'python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j[\"runs\"]; assert j[\"schema\"]==\"grpo-launch/status-list/v1\" and [x[\"run_dir\"].split(\"/\")[-1] for x in r]==[\"a-done\",\"b-live\"] and r[0][\"state\"]==\"succeeded\" and r[0][\"step\"]==r[0][\"total_steps\"]" "$tmp/many.json"' "status DIR json"

if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "all visibility checks passed"
