/* Typesets every element of class "arithmatex" with the bundled KaTeX (no network).
 * pymdownx.arithmatex (generic mode) writes inline math as <span class="arithmatex">\(…\)</span>
 * and display math as <div class="arithmatex">\[…\]</div>; the docs' notebook pages and the
 * reproduction's HTML report write the same markup. An expression KaTeX cannot parse is shown
 * in red with KaTeX's message as its title (throwOnError: false), never silently dropped. */
(function () {
  function strip(tex) {
    tex = tex.trim();
    if ((tex.startsWith("\\(") && tex.endsWith("\\)")) ||
        (tex.startsWith("\\[") && tex.endsWith("\\]"))) return tex.slice(2, -2);
    if (tex.startsWith("$$") && tex.endsWith("$$")) return tex.slice(2, -2);
    if (tex.startsWith("$") && tex.endsWith("$")) return tex.slice(1, -1);
    return tex;
  }
  function typeset(root) {
    if (typeof katex === "undefined") return;
    (root || document).querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.getAttribute("data-typeset")) return;
      katex.render(strip(el.textContent), el, {
        displayMode: el.tagName === "DIV", throwOnError: false, output: "htmlAndMathml"
      });
      el.setAttribute("data-typeset", "1");
    });
  }
  if (typeof document$ !== "undefined") {          // MkDocs Material: every page load
    document$.subscribe(function () { typeset(document); });
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { typeset(document); });
  } else {
    typeset(document);
  }
})();
