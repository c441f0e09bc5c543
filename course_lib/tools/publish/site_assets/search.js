/* The course website's search box: offline, served or opened from disk (file://).
   On first use it loads _static/search-index.js (a script assigning window.COURSE_SEARCH_INDEX, a MiniSearch index
   built by course_lib/tools/publish/site_search.py: a script, not a fetch, so that file:// works too), then shows the
   sections of every page that contain all the words typed (the last one may be the start of a word).
   Ranking: MiniSearch's BM25 score, with a match in a section's heading worth more than one in the page's title or
   text, times the page's kind (KIND_BOOST): the lesson that teaches a word comes before the exercise and the guides
   that use it. Every hit names its section and opens at it. */
(function () {
  "use strict";
  var form = document.getElementById("site-search");
  if (!form || typeof MiniSearch === "undefined") return;
  var input = document.getElementById("site-search-input");
  var panel = document.getElementById("site-search-results");
  var root = form.getAttribute("data-root") || "";
  var OPTIONS = { fields: ["title", "heading", "text"], storeFields: ["title", "heading", "url", "excerpt", "kind"] };
  var KIND_BOOST = { lesson: 2.5, exercise: 1, guide: 0.6 };
  var KIND_LABEL = { lesson: "Lesson", exercise: "Exercise", guide: "Guide" };
  var SEARCH = {
    prefix: function (term, i, terms) { return i === terms.length - 1; },
    fuzzy: function (term) { return term.length > 5 ? 0.15 : false; },
    combineWith: "AND",
    boost: { heading: 4, title: 1.5 },
    boostDocument: function (id, term, stored) { return (stored && KIND_BOOST[stored.kind]) || 1; }
  };
  var MAX_RESULTS = 12;
  var index = null;
  var loading = null;

  function load() {
    if (index || loading) return loading;
    loading = new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = root + "_static/search-index.js";
      script.onload = function () {
        index = MiniSearch.loadJS(window.COURSE_SEARCH_INDEX, OPTIONS);
        resolve(index);
      };
      script.onerror = function () { reject(new Error("search index not found")); };
      document.head.appendChild(script);
    });
    return loading;
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  function show(query) {
    panel.textContent = "";
    if (!query.trim()) { panel.hidden = true; return; }
    var results = index.search(query, SEARCH);
    var heading = element("p", "search-count",
      results.length ? results.length + (results.length === 1 ? " section" : " sections") + " found" +
        (results.length > MAX_RESULTS ? ", the first " + MAX_RESULTS + " shown" : "")
        : "Nothing found for “" + query.trim() + "”.");
    panel.appendChild(heading);
    var list = element("ol", "search-list");
    results.slice(0, MAX_RESULTS).forEach(function (result) {
      var item = element("li");
      var link = element("a", "search-hit");
      link.href = root + result.url;
      var page = element("span", "search-page");
      if (KIND_LABEL[result.kind]) page.appendChild(element("span", "search-kind search-kind-" + result.kind, KIND_LABEL[result.kind]));
      page.appendChild(document.createTextNode(result.title));
      link.appendChild(page);
      link.appendChild(element("span", "search-heading", result.heading));
      link.addEventListener("click", function () { panel.hidden = true; });
      item.appendChild(link);
      if (result.excerpt) item.appendChild(element("p", "search-excerpt", result.excerpt));
      list.appendChild(item);
    });
    panel.appendChild(list);
    panel.hidden = false;
  }

  function update() {
    var query = input.value;
    var ready = load();
    if (ready) ready.then(function () { if (input.value === query) show(query); }, function (error) {
      panel.textContent = "The search index could not be loaded: rebuild the site with python -m course_lib site.";
      panel.hidden = false;
    });
  }

  input.addEventListener("focus", load);
  input.addEventListener("input", update);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var first = panel.querySelector("a.search-hit");
    if (first) window.location.href = first.href;
    else update();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { panel.hidden = true; input.focus(); }
  });
  document.addEventListener("click", function (event) {
    if (!form.contains(event.target)) panel.hidden = true;
  });
})();
