#!/usr/bin/env bash
# Side by side with a peer: cairn server and MinIO on the same kind of disk
# directories, the same erasure code (4 data + 4 parity on 8 disks: a cairn
# bucket with rs-4-4, MinIO's EC:4), the same S3 benchmark (MinIO's warp),
# back to back. Prints, per operation, object size and client count, each
# server's throughput and cairn ÷ MinIO for throughput and p50/p99 latency;
# then each server's CPU milliseconds per MiB of PUT and of GET (measured
# by cairn bench s3 --pid around each phase). docs/benchmarks.md explains it
# and has the last numbers.
#
#   bench/peer/minio-warp.sh [--quick] [--out DIR]
#
# Needs the two peer binaries (not built by CI: about 15 minutes here):
#   go install github.com/minio/minio@latest           # → $(go env GOPATH)/bin/minio
#   GOSUMDB=off go mod download github.com/minio/warp@v1.3.1
#   (cd "$(go env GOMODCACHE)/github.com/minio/warp@v1.3.1" && GOFLAGS=-mod=mod go build -o "$(go env GOPATH)/bin/warp" .)
# or name them with MINIO=PATH WARP=PATH. cairn is built from this tree.
# Environment: DURATION (per run, default 20s; 10s with --quick), SIZES
# ("1MiB 64KiB 16MiB"; "1MiB" with --quick), CLIENTS ("8 32"; "8"), OPS
# ("put get mixed"), DISKS (8), CAIRN_POLICY (rs-4-4), MINIO_EC (EC:4).
set -euo pipefail

quick=0
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--out) out="$2"; shift ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "minio-warp.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
if [ "$quick" = 1 ]; then
	: "${DURATION:=10s}" "${SIZES:=1MiB}" "${CLIENTS:=8}"
fi
: "${DURATION:=20s}" "${SIZES:=1MiB 64KiB 16MiB}" "${CLIENTS:=8 32}" "${OPS:=put get mixed}"
: "${DISKS:=8}" "${CAIRN_POLICY:=rs-4-4}" "${MINIO_EC:=EC:4}"
gobin="$(go env GOPATH)/bin"
: "${MINIO:=$gobin/minio}" "${WARP:=$gobin/warp}"
for b in "$MINIO" "$WARP"; do
	if [ ! -x "$b" ]; then
		echo "minio-warp.sh: $b not found: build it as the header of this script says, or set MINIO=/WARP=" >&2
		exit 2
	fi
done

repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/cairn-peer-XXXXXX)"
out="${out:-$work/out}"
mkdir -p "$out"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work/cairn" "$work/minio"
}
trap cleanup EXIT
trap "exit 1" INT TERM

(cd "$repo" && go build -o "$work/cairn-bin" ./cmd/cairn)
access=peerbench secret=peerbench-secret-key

# cairn server: one process, DISKS disk directories; the bucket warp uses is
# made with the policy first (warp empties it, it does not remake it).
disk_args=()
for i in $(seq 1 "$DISKS"); do disk_args+=(--disk "$work/cairn/disk$i"); done
"$work/cairn-bin" server --data "$work/cairn" --port-base 39000 --console-addr off \
	--access-key "$access" --secret-key "$secret" "${disk_args[@]}" >"$work/cairn.log" 2>&1 &
cairn_pid=$!
pids+=("$cairn_pid")
for _ in $(seq 1 120); do grep -q "cairn server ready" "$work/cairn.log" && break; sleep 0.5; done
grep -q "cairn server ready" "$work/cairn.log" || { cat "$work/cairn.log"; exit 1; }
"$work/cairn-bin" mb --config "$work/cairn/client.conf" --policy "$CAIRN_POLICY" warp-benchmark-bucket

# MinIO: one process over the same number of directories, EC:4.
minio_dirs=()
for i in $(seq 1 "$DISKS"); do minio_dirs+=("$work/minio/disk$i"); mkdir -p "$work/minio/disk$i"; done
MINIO_CI_CD=1 MINIO_ROOT_USER="$access" MINIO_ROOT_PASSWORD="$secret" MINIO_STORAGE_CLASS_STANDARD="$MINIO_EC" \
	MINIO_BROWSER=off "$MINIO" server --address 127.0.0.1:39900 --console-address 127.0.0.1:39901 "${minio_dirs[@]}" \
	>"$work/minio.log" 2>&1 &
minio_pid=$!
pids+=("$minio_pid")
for _ in $(seq 1 120); do curl -sf http://127.0.0.1:39900/minio/health/ready >/dev/null && break; sleep 0.5; done
curl -sf http://127.0.0.1:39900/minio/health/ready >/dev/null || { cat "$work/minio.log"; exit 1; }

# objects SIZE: how many objects warp prepares (about 1 GiB, 50 to 1000).
objects() {
	local bytes
	bytes=$(numfmt --from=iec-i "${1%B}")
	local n=$(((1 << 30) / bytes))
	[ "$n" -lt 50 ] && n=50
	[ "$n" -gt 1000 ] && n=1000
	echo "$n"
}

csv="$out/peer.csv"
echo "op,size,clients,server,mib_per_s,p50_ms,p99_ms" >"$csv"
# run SERVER ADDR OP SIZE CLIENTS: one warp run; appends a CSV line.
run() {
	local name=$1 addr=$2 op=$3 size=$4 clients=$5 log more=()
	log="$out/$op-$size-$clients-$name.txt"
	[ "$op" != put ] && more=(--objects "$(objects "$size")")
	"$WARP" "$op" --host "$addr" --access-key "$access" --secret-key "$secret" --obj.size "$size" \
		"${more[@]}" --concurrent "$clients" --duration "$DURATION" --no-color \
		--benchdata "$out/$op-$size-$clients-$name" >"$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
	# The report's sections start "Report: GET. Concurrency: 8. ..." and
	# hold " * Average: 601.18 MiB/s, ..." and " * Reqs: Avg: 17.5ms,
	# 50%: 10.7ms, 90%: 34.9ms, 99%: 100.5ms, ...". mixed has one section
	# per operation and a Total: its throughput is the Total's, its
	# latencies the GET section's.
	awk -v name="$name" -v op="$op" -v size="$size" -v clients="$clients" '
		function ms(s) { if (s ~ /µs$/) return s / 1000; if (s ~ /ms$/) return s + 0; if (s ~ /s$/) return s * 1000; return s + 0 }
		/^Report: / { sect = toupper($2); sub(/\.$/, "", sect) }
		/\* Average: .*MiB\/s/ { thr[sect] = $3 + 0 }
		/\* Reqs: / { for (i = 1; i <= NF; i++) { v = $(i+1); sub(/,$/, "", v); if ($i == "50%:") p50[sect] = ms(v); if ($i == "99%:") p99[sect] = ms(v) } }
		END {
			t = (op == "mixed") ? "TOTAL" : toupper(op)
			l = (op == "mixed") ? "GET" : toupper(op)
			printf "%s,%s,%s,%s,%.1f,%.1f,%.1f\n", op, size, clients, name, thr[t], p50[l], p99[l]
		}' "$log" >>"$csv"
}

for op in $OPS; do
	for size in $SIZES; do
		for clients in $CLIENTS; do
			echo "== warp $op $size x$clients" >&2
			run cairn 127.0.0.1:39000 "$op" "$size" "$clients"
			run minio 127.0.0.1:39900 "$op" "$size" "$clients"
		done
	done
done

# CPU per byte: warp's own puts (its preparation) would count in a GET run's
# CPU, so the cost of a byte comes from cairn bench s3, which measures the
# server's CPU time around each phase (--pid), 8 clients per size.
cpucsv="$out/cpu.csv"
echo "size,server,put_cpu_ms_per_mib,get_cpu_ms_per_mib" >"$cpucsv"
for size in $SIZES; do
	for srv in cairn minio; do
		echo "== cpu $size $srv" >&2
		if [ "$srv" = cairn ]; then
			args=(--endpoint http://127.0.0.1:39000 --pid "$cairn_pid" --policy "$CAIRN_POLICY")
		else
			args=(--endpoint http://127.0.0.1:39900 --pid "$minio_pid")
		fi
		"$work/cairn-bin" bench s3 "${args[@]}" --access-key "$access" --secret-key "$secret" --size "$size" \
			--clients 8 --duration "$DURATION" --bucket "cpu-$srv-$(echo "$size" | tr 'A-Z' 'a-z')" --json 2>/dev/null |
			python3 -c 'import json,sys; r=json.load(sys.stdin)["runs"][0]; print("%s,%s,%.2f,%.2f" % (sys.argv[1], sys.argv[2], r["put"].get("server_cpu_ms_per_mib", 0), r["get"].get("server_cpu_ms_per_mib", 0)))' "$size" "$srv" >>"$cpucsv"
	done
done

# The tables: each case's numbers and cairn ÷ MinIO.
echo
awk -F, 'NR > 1 {
	k = $1 " " $2 " x" $3
	if (!(k in seen)) { order[++n] = k; seen[k] = 1 }
	v[k, $4, "thr"] = $5; v[k, $4, "p50"] = $6; v[k, $4, "p99"] = $7
}
function r(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "-" }
END {
	printf "| %s | %s | %s | %s | %s | %s |\n", "warp", "cairn MiB/s", "MinIO MiB/s", "cairn ÷ MinIO", "p50 cairn ÷ MinIO", "p99 cairn ÷ MinIO"
	print "| --- | --- | --- | --- | --- | --- |"
	for (i = 1; i <= n; i++) {
		k = order[i]
		printf "| %s | %.1f | %.1f | %s | %s | %s |\n", k, v[k, "cairn", "thr"], v[k, "minio", "thr"], r(v[k, "cairn", "thr"], v[k, "minio", "thr"]),
			r(v[k, "cairn", "p50"], v[k, "minio", "p50"]), r(v[k, "cairn", "p99"], v[k, "minio", "p99"])
	}
}' "$csv"
echo
awk -F, 'NR > 1 { put[$1, $2] = $3; get[$1, $2] = $4; if (!($1 in seen)) { order[++n] = $1; seen[$1] = 1 } }
function r(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "-" }
END {
	print "| CPU ms per MiB (cairn bench s3, 8 clients) | cairn PUT | MinIO PUT | cairn ÷ MinIO | cairn GET | MinIO GET | cairn ÷ MinIO |"
	print "| --- | --- | --- | --- | --- | --- | --- |"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", s, put[s, "cairn"], put[s, "minio"], r(put[s, "cairn"], put[s, "minio"]), get[s, "cairn"], get[s, "minio"], r(get[s, "cairn"], get[s, "minio"])
	}
}' "$cpucsv"
echo "CSV files and warp's reports: $out" >&2
