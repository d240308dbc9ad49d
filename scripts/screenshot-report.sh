#!/usr/bin/env bash
# Screenshots a nandlab report.html with Debian's headless Chromium:
#   scripts/screenshot-report.sh OUT/report.html [report.png]
# Fails when Chromium renders no inline SVG figure or the report names a
# missing plot. `nandlab reproduce all --out OUT` writes OUT/report.html.
# SCREENSHOT_SIZE=WIDTH,HEIGHT sets the window (default 1200,3000).
set -euo pipefail
report=${1:?usage: $0 REPORT.html [SCREENSHOT.png]}
png=${2:-${report%.html}.png}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "screenshot-report: chromium is not installed (apt-get install chromium)" >&2
    exit 2
fi
url="file://$(realpath "$report")"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile")
dom=$(timeout 120 "$browser" "${flags[@]}" --dump-dom "$url" 2>/dev/null)
figures=$(grep -o '<svg' <<<"$dom" | wc -l)
if [ "$figures" -eq 0 ]; then
    echo "screenshot-report: $report has no rendered SVG figure" >&2
    exit 1
fi
if grep -q 'missing plot' <<<"$dom"; then
    echo "screenshot-report: $report names a missing plot" >&2
    exit 1
fi
timeout 120 "$browser" "${flags[@]}" --window-size="${SCREENSHOT_SIZE:-1200,3000}" --screenshot="$png" "$url" >/dev/null 2>&1
echo "screenshot-report: $figures figure(s) rendered, screenshot in $png"
