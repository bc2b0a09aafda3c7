#!/usr/bin/env bash
# The site's link check must be able to fail: a page with a missing file, a missing image, a
# missing anchor and a glossary word linked to the glossary page instead of its term is refused
# with each one named, and the same page with them fixed passes.
set -euo pipefail
check=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/html"
cat > "$tmp/html/index.html" <<'HTML'
<html><body><a id="here"></a><a href="other.html#nowhere">x</a><a href="gone.html">y</a>
<img src="images/plot.png"><a href="#here">self</a><a href="https://example.org/">ext</a>
<a href="glossary.html">KV <b>cache</b></a><a href="glossary.html#glossary_slot">slot</a>
<a href="glossary.html">the Glossary</a></body></html>
HTML
echo '<html><body><h2 id="glossary_slot">Slot</h2><a href="glossary.html">self</a></body></html>' \
  > "$tmp/html/glossary.html"
echo '<html><body><h1 id="top">other</h1></body></html>' > "$tmp/html/other.html"
if out=$(python3 "$check" "$tmp/html"); then
  echo "FAILED: the link check passed a page with broken links"; exit 1
fi
for want in "gone.html (no such file)" "images/plot.png (missing image)" "other.html#nowhere (no anchor" \
            'glossary.html ("kv cache" links the glossary page, not the term'; do
  grep -qF "$want" <<<"$out" || { echo "FAILED: '$want' not reported in: $out"; exit 1; }
done
sed -i 's/#nowhere/#top/; s/gone.html/other.html/; s/<img src="images\/plot.png">//;
        s/"glossary.html">KV/"glossary.html#glossary_slot">KV/' "$tmp/html/index.html"
python3 "$check" "$tmp/html" >/dev/null || { echo "FAILED: the fixed page is refused"; exit 1; }
echo "ok"
