#!/usr/bin/env bash
# S3 smoke test with real clients against `cairn server`: the aws CLI (a
# 100 MiB cp that forces multipart, a 20 MiB one in the COLD class, sync of a tree, s3api calls, a presigned
# URL, which the CLI v1 signs with Signature V2, fetched with curl; a POST
# form upload presigned by botocore and sent with curl -F; Object Lock:
# put-object-retention, put-object-legal-hold), rclone
# (copy and check) and s3cmd with Signature V2 (put, multipart put, get,
# ls, del). Installs them if missing (pip, apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v aws >/dev/null; then
  echo "== installing the aws CLI (pip)"
  python3 -m pip install -q awscli
fi
if ! command -v s3cmd >/dev/null; then
  echo "== installing s3cmd (pip)"
  python3 -m pip install -q s3cmd
fi
if ! command -v rclone >/dev/null; then
  echo "== installing rclone (apt-get)"
  apt-get install -y -q rclone >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q rclone >/dev/null; }
fi

work=$(mktemp -d)
bin="$work/cairn"
go build -o "$bin" ./cmd/cairn
export AWS_ACCESS_KEY_ID=CAIRNSMOKETEST AWS_SECRET_ACCESS_KEY=cairn-smoke-secret AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE="$work/aws-config" AWS_SHARED_CREDENTIALS_FILE="$work/aws-credentials"
# Port 0 everywhere (--port-base 0): the server binds first and prints the
# bound addresses in its ready line, "cairn server ready meta=... node=...
# s3=http://..." (internal/proc).
"$bin" server --data "$work/data" --port-base 0 --cold-every 2s \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
ready() { grep -s '^cairn server ready ' "$work/server.log"; }
for _ in $(seq 100); do ready >/dev/null && break; kill -0 $server 2>/dev/null || break; sleep 0.2; done
ready >/dev/null || { cat "$work/server.log"; exit 1; }
ep=$(ready | tr ' ' '\n' | sed -n 's/^s3=//p')
s3() { aws --endpoint-url "$ep" s3 "$@"; }
s3api() { aws --endpoint-url "$ep" s3api "$@"; }

echo "== aws s3: a 100 MiB object (multipart, streaming signatures)"
head -c 104857600 /dev/urandom >"$work/big"
s3 mb s3://smoke
s3 cp --only-show-errors "$work/big" s3://smoke/dir/big
s3 cp --only-show-errors s3://smoke/dir/big "$work/big.back"
cmp "$work/big" "$work/big.back"
# Output is read whole before grep -q, which stops at its first match: a client
# still writing would fail with EPIPE (s3cmd exits 74) and pipefail would fail CI.
grep -q '"ETag": "\\"[0-9a-f]*-[0-9]*\\""' <<<"$(s3api head-object --bucket smoke --key dir/big)"

echo "== aws s3: a 20 MiB object in the COLD class (multipart), moved to the cold tier by the export job"
# The CLI's s3 commands accept only AWS's class names: GLACIER_IR is COLD's alias.
head -c 20971520 /dev/urandom >"$work/cold"
s3 cp --only-show-errors --storage-class GLACIER_IR "$work/cold" s3://smoke/cold
exported() { "$bin" stat --config "$work/data/client.conf" smoke/cold 2>/dev/null | grep -q '^cold '; }
for _ in $(seq 300); do exported && break; sleep 0.2; done
exported || { echo "smoke/cold was not exported within a minute"; "$bin" stat --config "$work/data/client.conf" smoke/cold; exit 1; }
s3 cp --only-show-errors s3://smoke/cold "$work/cold.back"
cmp "$work/cold" "$work/cold.back"
grep -q '"StorageClass": "COLD"' <<<"$(s3api head-object --bucket smoke --key cold)"

echo "== aws s3 sync of a tree"
mkdir -p "$work/tree/a/b" "$work/tree/c"
for i in $(seq 20); do head -c $((i * 7919)) /dev/urandom >"$work/tree/a/b/f$i"; done
echo hello >"$work/tree/c/hello.txt"
: >"$work/tree/empty"
s3 sync --only-show-errors "$work/tree" s3://smoke/tree
s3 sync --only-show-errors s3://smoke/tree "$work/tree.back"
diff -r "$work/tree" "$work/tree.back"

echo "== aws s3api"
grep -q '"Prefix": "tree/a/"' <<<"$(s3api list-objects-v2 --bucket smoke --prefix tree/ --delimiter /)"
grep -q '"VersionId": "null"' <<<"$(s3api list-object-versions --bucket smoke --prefix tree/c/)"
s3api copy-object --bucket smoke --key copied --copy-source smoke/tree/c/hello.txt >/dev/null
s3api get-object --bucket smoke --key copied "$work/copied" >/dev/null
cmp "$work/copied" "$work/tree/c/hello.txt"
s3api delete-objects --bucket smoke --delete 'Objects=[{Key=copied},{Key=tree/empty}]' >/dev/null
if s3api head-object --bucket smoke --key copied >/dev/null 2>&1; then
  echo "delete-objects left 'copied' behind"; exit 1
fi

echo "== aws s3api tagging, upload-part-copy, get-object-attributes, cors"
s3api put-object-tagging --bucket smoke --key tree/c/hello.txt --tagging 'TagSet=[{Key=team,Value=blue}]'
grep -q '"Value": "blue"' <<<"$(s3api get-object-tagging --bucket smoke --key tree/c/hello.txt)"
up=$(s3api create-multipart-upload --bucket smoke --key composed --query UploadId --output text)
# The ETags as JSON strings (quotes and all), put into the JSON of the completion.
etag1=$(s3api upload-part-copy --bucket smoke --key composed --upload-id "$up" --part-number 1 \
  --copy-source smoke/dir/big --copy-source-range bytes=0-5242879 --query CopyPartResult.ETag --output json)
etag2=$(s3api upload-part-copy --bucket smoke --key composed --upload-id "$up" --part-number 2 \
  --copy-source smoke/tree/c/hello.txt --query CopyPartResult.ETag --output json)
s3api complete-multipart-upload --bucket smoke --key composed --upload-id "$up" \
  --multipart-upload "{\"Parts\":[{\"PartNumber\":1,\"ETag\":$etag1},{\"PartNumber\":2,\"ETag\":$etag2}]}" >/dev/null
s3api get-object --bucket smoke --key composed "$work/composed" >/dev/null
{ head -c 5242880 "$work/big"; cat "$work/tree/c/hello.txt"; } | cmp - "$work/composed"
grep -q '"TotalPartsCount": 2' <<<"$(s3api get-object-attributes --bucket smoke --key composed --object-attributes ObjectParts ObjectSize)"
s3api put-bucket-cors --bucket smoke --cors-configuration '{"CORSRules":[{"AllowedOrigins":["https://app.example"],"AllowedMethods":["GET"]}]}'
curl -fsS -o /dev/null -X OPTIONS -H 'Origin: https://app.example' -H 'Access-Control-Request-Method: GET' "$ep/smoke/composed"

echo "== aws s3api versioning: put-bucket-versioning, versions of a key, a delete marker, list-object-versions"
s3 mb s3://smoke-versions
s3api put-bucket-versioning --bucket smoke-versions --versioning-configuration Status=Enabled
grep -q '"Status": "Enabled"' <<<"$(s3api get-bucket-versioning --bucket smoke-versions)"
echo one >"$work/v1"
echo two >"$work/v2"
v1=$(s3api put-object --bucket smoke-versions --key k --body "$work/v1" --query VersionId --output text)
s3api put-object --bucket smoke-versions --key k --body "$work/v2" >/dev/null
s3api delete-object --bucket smoke-versions --key k >/dev/null
versions=$(s3api list-object-versions --bucket smoke-versions)
[ "$(grep -c '"VersionId"' <<<"$versions")" = 3 ] || { echo "list-object-versions: $versions"; exit 1; }
grep -q '"DeleteMarkers"' <<<"$versions"
s3api get-object --bucket smoke-versions --key k --version-id "$v1" "$work/v1.back" >/dev/null
cmp "$work/v1" "$work/v1.back"

echo "== aws s3api object lock: a lock bucket, its default retention, put-object-retention, put-object-legal-hold, a locked delete refused"
s3api create-bucket --bucket smoke-lock --object-lock-enabled-for-bucket >/dev/null
s3api put-object-lock-configuration --bucket smoke-lock \
  --object-lock-configuration '{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1}}}'
grep -q '"Mode": "GOVERNANCE"' <<<"$(s3api get-object-lock-configuration --bucket smoke-lock)"
lv=$(s3api put-object --bucket smoke-lock --key k --body "$work/v1" --content-md5 "$(openssl md5 -binary "$work/v1" | base64)" \
  --query VersionId --output text)
grep -q '"ObjectLockMode": "GOVERNANCE"' <<<"$(s3api head-object --bucket smoke-lock --key k)"
until=$(date -u -d '+2 days' +%Y-%m-%dT%H:%M:%SZ) # longer than the default's day: never shortened
s3api put-object-retention --bucket smoke-lock --key k --version-id "$lv" \
  --retention "{\"Mode\":\"COMPLIANCE\",\"RetainUntilDate\":\"$until\"}"
grep -q '"Mode": "COMPLIANCE"' <<<"$(s3api get-object-retention --bucket smoke-lock --key k --version-id "$lv")"
s3api put-object-legal-hold --bucket smoke-lock --key k --version-id "$lv" --legal-hold Status=ON
grep -q '"Status": "ON"' <<<"$(s3api get-object-legal-hold --bucket smoke-lock --key k --version-id "$lv")"
if s3api delete-object --bucket smoke-lock --key k --version-id "$lv" --bypass-governance-retention >/dev/null 2>&1; then
  echo "a COMPLIANCE-locked version was deleted"; exit 1
fi
s3api get-object --bucket smoke-lock --key k --version-id "$lv" "$work/lock.back" >/dev/null
cmp "$work/v1" "$work/lock.back"

echo "== aws s3api put-bucket-policy: anonymous curl reads public/, not private/"
s3 mb s3://smoke-public
echo public >"$work/pub"
s3api put-object --bucket smoke-public --key public/x --body "$work/pub" >/dev/null
s3api put-object --bucket smoke-public --key private/x --body "$work/pub" >/dev/null
if curl -fsS -o /dev/null "$ep/smoke-public/public/x" 2>/dev/null; then
  echo "an anonymous GET read an object before any grant"; exit 1
fi
s3api put-bucket-policy --bucket smoke-public --policy '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::smoke-public/public/*"}]}'
grep -q '"IsPublic": true' <<<"$(s3api get-bucket-policy-status --bucket smoke-public)"
curl -fsS -o "$work/pub.back" "$ep/smoke-public/public/x"
cmp "$work/pub" "$work/pub.back"
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$ep/smoke-public/private/x")" = 403 ] || { echo "anonymous GET of private/x was not refused"; exit 1; }
s3api put-object-acl --bucket smoke-public --key private/x --acl public-read
curl -fsS -o /dev/null "$ep/smoke-public/private/x"
grep -q 'AllUsers' <<<"$(s3api get-object-acl --bucket smoke-public --key private/x)"
s3api put-public-access-block --bucket smoke-public --public-access-block-configuration IgnorePublicAcls=true,RestrictPublicBuckets=true
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$ep/smoke-public/public/x")" = 403 ] || { echo "RestrictPublicBuckets did not close the bucket"; exit 1; }
s3api delete-bucket-policy --bucket smoke-public

echo "== aws s3 presign (Signature V2 in the aws CLI v1), fetched with curl"
url=$(s3 presign s3://smoke/dir/big --expires-in 300)
case "$url" in
  *AWSAccessKeyId=*Signature=*) ;;
  *) echo "aws s3 presign made no SigV2 URL: $url"; exit 1 ;;
esac
curl -fsS -o "$work/presigned" "$url"
cmp "$work/big" "$work/presigned"
if curl -fsS -o /dev/null "${url/Signature=/Signature=x}" 2>/dev/null; then
  echo "a presigned URL with a changed signature was accepted"; exit 1
fi

echo "== POST upload: a browser form signed by botocore's presigner, sent with curl -F"
# form NAME prints curl --form-string arguments (NUL-separated) for a form
# presigned for key form/${filename}; NAME=tampered widens its policy's key
# condition without re-signing it.
form() {
  python3 - "$ep" "$1" <<'PY'
import base64, json, sys, botocore.session
from botocore.config import Config
c = botocore.session.get_session().create_client('s3', endpoint_url=sys.argv[1], config=Config(s3={'addressing_style': 'path'}))
p = c.generate_presigned_post('smoke', 'form/${filename}', Conditions=[['starts-with', '$key', 'form/'], ['content-length-range', 1, 1048576]], ExpiresIn=300)
f = p['fields']
if sys.argv[2] == 'tampered':
    doc = json.loads(base64.b64decode(f['policy']))
    doc['conditions'] = [c for c in doc['conditions'] if not (isinstance(c, list) and c[1:2] == ['$key'])] + [['starts-with', '$key', '']]
    f['policy'] = base64.b64encode(json.dumps(doc).encode()).decode()
for k, v in f.items():
    sys.stdout.write('--form-string\0%s=%s\0' % (k, v))
PY
}
mapfile -d '' -t fields < <(form good)
[ "$(curl -sS -o /dev/null -w '%{http_code}' "${fields[@]}" -F "file=@$work/tree/c/hello.txt" "$ep/smoke")" = 204 ]
s3api get-object --bucket smoke --key form/hello.txt "$work/form.back" >/dev/null
cmp "$work/tree/c/hello.txt" "$work/form.back"
mapfile -d '' -t fields < <(form tampered)
[ "$(curl -sS -o /dev/null -w '%{http_code}' "${fields[@]}" -F "file=@$work/tree/c/hello.txt" "$ep/smoke")" = 403 ]

echo "== lifecycle rules with the aws CLI: put, get, delete"
cat >"$work/lifecycle.json" <<'JSON'
{"Rules": [{"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"}, "Expiration": {"Days": 7},
  "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}]}
JSON
s3api put-bucket-lifecycle-configuration --bucket smoke --lifecycle-configuration "file://$work/lifecycle.json"
grep -q '"Days": 7' <<<"$(s3api get-bucket-lifecycle-configuration --bucket smoke)"
s3api delete-bucket-lifecycle --bucket smoke
if s3api get-bucket-lifecycle-configuration --bucket smoke >/dev/null 2>&1; then
  echo "a deleted lifecycle configuration is still there"; exit 1
fi

echo "== s3cmd with Signature V2: mb, put (and multipart), ls, get, del"
cat >"$work/s3cmd.conf" <<CONF
[default]
access_key = $AWS_ACCESS_KEY_ID
secret_key = $AWS_SECRET_ACCESS_KEY
host_base = ${ep#http://}
host_bucket = ${ep#http://}
use_https = False
signature_v2 = True
bucket_location = us-east-1
CONF
s3c() { s3cmd -c "$work/s3cmd.conf" --no-progress "$@"; }
head -c 12582912 /dev/urandom >"$work/mid"
s3c mb s3://s3cmd-v2 >/dev/null
s3c put "$work/tree/c/hello.txt" s3://s3cmd-v2/small/hello.txt >/dev/null
s3c put --multipart-chunk-size-mb=5 "$work/mid" s3://s3cmd-v2/mid >/dev/null
grep -q 's3://s3cmd-v2/small/hello.txt' <<<"$(s3c ls s3://s3cmd-v2/small/)"
grep -q 's3://s3cmd-v2' <<<"$(s3c ls)"
s3c get s3://s3cmd-v2/small/hello.txt "$work/s3cmd-hello" >/dev/null
s3c get s3://s3cmd-v2/mid "$work/s3cmd-mid" >/dev/null
cmp "$work/tree/c/hello.txt" "$work/s3cmd-hello"
cmp "$work/mid" "$work/s3cmd-mid"
s3c del s3://s3cmd-v2/small/hello.txt s3://s3cmd-v2/mid >/dev/null
s3c rb s3://s3cmd-v2 >/dev/null

echo "== rclone copy and check"
cat >"$work/rclone.conf" <<CONF
[cairn]
type = s3
provider = Other
access_key_id = $AWS_ACCESS_KEY_ID
secret_access_key = $AWS_SECRET_ACCESS_KEY
endpoint = $ep
region = us-east-1
CONF
# rclone refuses a custom CA bundle it cannot use (the endpoint is plain HTTP).
rc() { env -u AWS_CA_BUNDLE rclone --config "$work/rclone.conf" "$@"; }
rc mkdir cairn:rclone
rc copy "$work/tree" cairn:rclone/tree
rc check "$work/tree" cairn:rclone/tree
mkdir "$work/bigdir" && cp "$work/big" "$work/bigdir/"
rc copy "$work/bigdir" cairn:rclone/bigdir
rc check "$work/bigdir" cairn:rclone/bigdir

echo "S3 smoke passed"
