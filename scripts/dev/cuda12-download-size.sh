# Sizes of the pinned CUDA 12 downloads of scripts/build-cuda12.sh, asked of the registries (no download).
sed -n '/^PINS="/,/"$/p' scripts/build-cuda12.sh | tr -d '"' | grep -E '^(deb|whl) ' |
while read -r kind name ver sha; do
  if [ "$kind" = whl ]; then
    n=$(curl -fsS -H 'Accept: application/vnd.pypi.simple.v1+json' "https://pypi.org/simple/$name/" |
        python3 -c 'import json,sys; print(sum(f["size"] for f in json.load(sys.stdin)["files"] if f["hashes"].get("sha256")==sys.argv[1]))' "$sha")
  else
    n=$(curl -fsSI "http://deb.debian.org/debian/pool/non-free/n/nvidia-cuda-toolkit/${name}_${ver//\~/%7E}_amd64.deb" |
        tr -d '\r' | awk 'tolower($1)=="content-length:" {print $2}')
  fi
  echo "$n $name $ver"
done
