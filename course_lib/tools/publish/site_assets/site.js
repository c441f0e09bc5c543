/* The course website's page behaviour, offline, served or opened from disk (file://). Each part works alone and
   the page reads without it:
   - the header's height, for the sticky columns and for a heading opened from a link (it lands under the header);
   - on a phone, the "Contents" button opens and closes the contents (Escape closes them);
   - the "On this page" rail (wide screens) marks the section being read;
   - a "Copy" button on every code block (a real button: Tab to it, Enter or Space copies);
   - a code block or output that scrolls sideways shows a fade on the side that has more;
   - a figure drawn smaller than it is opens full size on a click, a tap or Enter, and closes with Escape;
   - "Show what was measured": opening one fold of a prediction opens every fold of it. */
(function () {
  "use strict";
  var header = document.getElementById("site-header");
  var root = document.documentElement;

  function setHeaderHeight() {
    if (header) root.style.setProperty("--site-header-height", header.getBoundingClientRect().height + "px");
  }
  setHeaderHeight();
  window.addEventListener("resize", setHeaderHeight);
  var searchBox = document.getElementById("site-search-input");
  if (searchBox && window.matchMedia("(max-width: 900px)").matches) searchBox.placeholder = "Search";

  /* -- the contents on a phone ------------------------------------------------------------------------------ */
  var button = document.getElementById("toc-button");
  var panel = document.getElementById("site-toc-panel");
  function setContents(open) {
    document.body.classList.toggle("toc-open", open);
    if (button) button.setAttribute("aria-expanded", open ? "true" : "false");
  }
  if (button && panel) {
    button.addEventListener("click", function () {
      var open = !document.body.classList.contains("toc-open");
      setContents(open);
      if (open) { var current = panel.querySelector("[aria-current]") || panel.querySelector("a"); if (current) current.focus(); }
    });
    panel.addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest("a")) setContents(false);
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && document.body.classList.contains("toc-open")) { setContents(false); button.focus(); }
    });
  }

  /* -- the section being read, marked in the rail ------------------------------------------------------------ */
  var railLinks = Array.prototype.slice.call(document.querySelectorAll(".page-rail .page-toc a, .toc-page-contents .page-toc a"));
  var headings = [];
  railLinks.forEach(function (link) {
    var id = decodeURIComponent(link.getAttribute("href").slice(1));
    var target = document.getElementById(id);
    if (target && headings.indexOf(target) < 0) headings.push(target);
  });
  var current = null;
  function markSection() {
    var line = (header ? header.getBoundingClientRect().bottom : 0) + 24;
    var reading = null;
    for (var i = 0; i < headings.length; i++) {
      if (headings[i].getBoundingClientRect().top <= line) reading = headings[i]; else break;
    }
    if (!reading && headings.length) reading = headings[0];
    if (reading === current) return;
    current = reading;
    railLinks.forEach(function (link) {
      var here = !!reading && decodeURIComponent(link.getAttribute("href").slice(1)) === reading.id;
      link.classList.toggle("is-current", here);
      if (here) link.setAttribute("aria-current", "location"); else link.removeAttribute("aria-current");
    });
    var marked = document.querySelector(".page-rail a.is-current");
    var rail = document.querySelector(".page-rail");
    if (marked && rail && rail.scrollHeight > rail.clientHeight) {
      var top = marked.offsetTop - rail.clientHeight / 2;
      rail.scrollTop = Math.max(0, top);
    }
  }
  var pending = false;
  window.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; markSection(); });
  }, { passive: true });
  window.addEventListener("hashchange", markSection);
  markSection();

  /* -- copy buttons on code blocks ---------------------------------------------------------------------------- */
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed"; area.style.top = "-1000px";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error("copy refused"));
    });
  }
  var blocks = document.querySelectorAll(".jp-InputArea-editor pre, .jp-MarkdownCell pre");
  Array.prototype.forEach.call(blocks, function (pre) {
    var holder = pre.parentElement;
    if (!holder) return;
    if (holder.children.length > 1) {  // the block shares its parent (a list item, say): give it a box of its own
      holder = document.createElement("div");
      pre.parentElement.insertBefore(holder, pre);
      holder.appendChild(pre);
    }
    holder.classList.add("has-copy");
    var copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy-code";
    copy.textContent = "Copy";
    copy.setAttribute("aria-label", "Copy this code");
    copy.addEventListener("click", function () {
      copyText(pre.textContent.replace(/\n$/, "")).then(function () {
        copy.textContent = "Copied";
      }, function () {
        copy.textContent = "Select and copy";
      });
      window.setTimeout(function () { copy.textContent = "Copy"; }, 2000);
    });
    holder.insertBefore(copy, pre);
  });

  /* -- code and outputs that scroll sideways show it ---------------------------------------------------------- */
  var scrollers = document.querySelectorAll("#content pre");
  function shade(pre) {
    var holder = pre.parentElement;
    var more = pre.scrollWidth - pre.clientWidth;
    holder.classList.toggle("scrolls-x", more > 1);
    holder.classList.toggle("scrolled-start", pre.scrollLeft <= 1);
    holder.classList.toggle("scrolled-end", pre.scrollLeft >= more - 1);
  }
  Array.prototype.forEach.call(scrollers, function (pre) {
    if (!pre.parentElement) return;
    pre.parentElement.classList.add("scroll-shade");
    pre.addEventListener("scroll", function () { shade(pre); }, { passive: true });
    shade(pre);
  });
  window.addEventListener("resize", function () { Array.prototype.forEach.call(scrollers, shade); });
  document.addEventListener("toggle", function () { Array.prototype.forEach.call(scrollers, shade); }, true);

  /* -- figures drawn smaller than they are open full size ----------------------------------------------------- */
  var zoom = null;
  function closeZoom() {
    if (!zoom) return;
    var from = zoom.from;
    zoom.parentNode.removeChild(zoom);
    zoom = null;
    document.body.classList.remove("zoom-open");
    if (from) from.focus();
  }
  function openZoom(image) {
    closeZoom();
    zoom = document.createElement("div");
    zoom.className = "figure-zoom";
    zoom.setAttribute("role", "dialog");
    zoom.setAttribute("aria-modal", "true");
    zoom.setAttribute("aria-label", "The figure at full size");
    var close = document.createElement("button");
    close.type = "button";
    close.className = "figure-zoom-close";
    close.textContent = "Close";
    close.addEventListener("click", closeZoom);
    var big = document.createElement("img");
    big.src = image.src;
    big.alt = image.alt;
    var frame = document.createElement("div");
    frame.className = "figure-zoom-frame";
    frame.appendChild(big);
    zoom.appendChild(close);
    zoom.appendChild(frame);
    zoom.from = image;
    document.body.appendChild(zoom);
    document.body.classList.add("zoom-open");
    close.focus();
  }
  function markZoomable(image) {
    var shrunk = image.naturalWidth > image.getBoundingClientRect().width * 1.25;
    image.classList.toggle("zoomable", shrunk);
    if (shrunk) {
      image.setAttribute("tabindex", "0");
      image.setAttribute("role", "button");
      image.setAttribute("aria-label", "Open the figure full size: " + image.alt);
    } else {
      image.removeAttribute("tabindex");
      image.removeAttribute("role");
      image.removeAttribute("aria-label");
    }
  }
  var images = document.querySelectorAll("#content .jp-RenderedImage img");
  Array.prototype.forEach.call(images, function (image) {
    if (image.complete) markZoomable(image); else image.addEventListener("load", function () { markZoomable(image); });
    image.addEventListener("click", function () { if (image.classList.contains("zoomable")) openZoom(image); });
    image.addEventListener("keydown", function (event) {
      if ((event.key === "Enter" || event.key === " ") && image.classList.contains("zoomable")) {
        event.preventDefault();
        openZoom(image);
      }
    });
  });
  window.addEventListener("resize", function () { Array.prototype.forEach.call(images, markZoomable); });
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") closeZoom(); });

  /* -- a prediction's folds open together ---------------------------------------------------------------------- */
  document.addEventListener("toggle", function (event) {
    var fold = event.target;
    if (!fold.matches || !fold.matches("details[data-prediction]")) return;
    var name = fold.getAttribute("data-prediction");
    Array.prototype.forEach.call(document.querySelectorAll("details[data-prediction]"), function (other) {
      if (other !== fold && other.getAttribute("data-prediction") === name && other.open !== fold.open) other.open = fold.open;
    });
  }, true);
})();
