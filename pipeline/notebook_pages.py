"""Notebook pages after rendering: what nbconvert and mkdocs-jupyter add that the site does not want.

* nbconvert's template loads mermaid from cdnjs and adds a MathJax 2 tag with an empty ``src``
  (and require.js from a CDN when asked): removed, the site loads nothing from another host.
* nbconvert's alt text for every output image is "No description has been provided for this
  image": replaced by the alt text the snippet gave each figure, in the order they were saved.
"""

import re

CDN_TAGS = re.compile(
    r"<script[^>]*\bsrc=\"(?:https?:)?//[^\"]*\"[^>]*>\s*</script>"  # require.js and friends
    r"|<script[^>]*\bsrc=\"\"[^>]*>\s*</script>"  # MathJax 2 tag with an empty src
    r"|<script type=\"module\">[^<]*?cdnjs[^<]*?</script>",  # the mermaid import
    re.S,
)
DEFAULT_ALT = 'alt="No description has been provided for this image"'


def clean(html: str, figures: list[dict]) -> str:
    """The page without CDN tags and with each figure's own alt text."""
    html = CDN_TAGS.sub("", html)
    for figure in figures[: html.count(DEFAULT_ALT)]:
        alt = figure["alt"].replace("&", "&amp;").replace('"', "&quot;")
        html = html.replace(DEFAULT_ALT, f'alt="{alt}"', 1)
    return html
