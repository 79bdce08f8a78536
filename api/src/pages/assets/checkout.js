// The checkout page's live parts (api/src/pages/checkout): the countdown,
// polling /checkout/{id}/status every 2 s, the status words (both languages
// come from the page's data- attributes), the copy button, and the redirect
// once paid. The server renders every state, so without this file the page
// is still right and its refresh link updates it.
(function () {
  "use strict";

  var POLL_MS = 2000;
  var root = document.getElementById("checkout");
  if (!root || !root.dataset.statusUrl) {
    return;
  }
  var data = root.dataset;
  // The payer's clock may be off: count down on the server's.
  var clockOffsetMs = Number(data.serverNow) - Date.now();
  var expiresAtMs = data.expiresAt ? Date.parse(data.expiresAt) : NaN;
  var outcome = data.outcome;
  var redirecting = false;
  var pollTimer = null;

  function text(name) {
    return data["text" + name.charAt(0).toUpperCase() + name.slice(1)] || "";
  }

  // mm:ss, or h:mm:ss from an hour up: as the server renders it.
  function clock(ms) {
    var total = Math.max(0, Math.floor(ms / 1000));
    var hours = Math.floor(total / 3600);
    var minutes = Math.floor(total / 60) % 60;
    var seconds = total % 60;
    var two = function (n) { return (n < 10 ? "0" : "") + n; };
    return hours > 0 ? hours + ":" + two(minutes) + ":" + two(seconds) : two(minutes) + ":" + two(seconds);
  }

  function tick() {
    var countdown = document.getElementById("countdown");
    if (!countdown || isNaN(expiresAtMs)) {
      return;
    }
    var left = expiresAtMs - (Date.now() + clockOffsetMs);
    countdown.textContent = clock(left);
    if (left <= 0 && outcome === "pending") {
      // The server expires the order on its own sweep: ask sooner.
      poll();
    }
  }

  function outcomeOf(status) {
    if (status.paid) {
      return "paid";
    }
    if (status.status === "EXPIRED") {
      return "expired";
    }
    if (status.status === "FAILED") {
      return "failed";
    }
    return "pending";
  }

  function isWebUrl(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url);
  }

  function redirect(url) {
    if (redirecting || !isWebUrl(url)) {
      return;
    }
    redirecting = true;
    var seconds = Number(data.redirectSeconds) || 3;
    var shown = document.getElementById("redirect-seconds");
    var timer = setInterval(function () {
      seconds -= 1;
      if (shown && seconds >= 0) {
        shown.textContent = String(seconds);
      }
      if (seconds <= 0) {
        clearInterval(timer);
        window.location.assign(url);
      }
    }, 1000);
  }

  function show(next, status) {
    if (next !== outcome) {
      outcome = next;
      root.dataset.outcome = next;
      var words = document.getElementById("status-text");
      if (words) {
        words.textContent = text(next);
        words.className = "status status-" + next;
      }
      var parts = root.querySelectorAll("[data-show]");
      for (var i = 0; i < parts.length; i++) {
        parts[i].hidden = parts[i].getAttribute("data-show") !== next;
      }
      if (next !== "pending" && pollTimer !== null) {
        clearInterval(pollTimer);
        pollTimer = null;
      }
    }
    if (next === "paid") {
      var link = document.getElementById("return-link");
      redirect(status && status.return_url ? status.return_url : link && link.href);
    }
  }

  var polling = false;
  function poll() {
    if (polling || outcome !== "pending") {
      return;
    }
    polling = true;
    fetch(data.statusUrl, { cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (status) {
        if (status && typeof status.status === "string") {
          if (status.expires_at) {
            expiresAtMs = Date.parse(status.expires_at);
          }
          show(outcomeOf(status), status);
        }
      })
      .catch(function () {
        // A dropped poll is retried by the next one.
      })
      .then(function () {
        polling = false;
      });
  }

  function copyNumber(button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    var result = document.getElementById("copy-result");
    var number = target ? target.textContent.trim() : "";
    var say = function (words) {
      if (result) {
        result.textContent = words;
      }
    };
    var fallback = function () {
      // Older browsers and plain-http pages have no navigator.clipboard:
      // select the number and ask the browser to copy the selection.
      var done = false;
      try {
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        done = document.execCommand("copy");
      } catch (error) {
        done = false;
      }
      say(done ? text("copied") : text("copyFailed"));
    };
    if (!number) {
      return;
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(number).then(function () {
        say(text("copied"));
      }, fallback);
    } else {
      fallback();
    }
  }

  var copy = document.getElementById("copy-va");
  if (copy) {
    copy.hidden = false;
    copy.addEventListener("click", function () {
      copyNumber(copy);
    });
  }

  show(outcome, null);
  tick();
  setInterval(tick, 1000);
  if (outcome === "pending") {
    pollTimer = setInterval(poll, POLL_MS);
  }
})();
