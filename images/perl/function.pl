#!/usr/bin/perl
# A minik8s function in Perl: the image's entrypoint serves the runtime's
# HTTP contract (pkg/function/event.go) on $PORT, so a Func naming this
# image (spec.image) chains, scales and fails like a Python one.
#
# It uses perl-base alone, which every Debian minbase has: no JSON::PP, so
# the JSON it reads and writes is done by hand below.
#
#   POST /invoke (or /)  the argument is the body; answers 200 with a Result
#   GET /readyz          200 at once (nothing to load), 503 while stopping
#   GET /healthz         200 while the server lives
use strict;
use warnings;
use Carp ();
use IO::Socket::IP;
use POSIX ();

# ---- the function ---------------------------------------------------------
# run shouts its argument: upper case and a '!'. check is true when the text
# was shouted once, so that a chain goes left the first time round and right
# the second. An argument "fail" makes run die: the call fails with the
# message, type PerlError.

sub run {
    my ($arg) = @_;
    die "asked to fail\n" if $arg eq 'fail';
    output("perl $^V shouts " . length($arg) . " characters\n");
    return uc($arg) . '!';
}

sub check {
    my ($ret) = @_;
    my $n = () = $ret =~ /!/g;
    return $n == 1;
}

# ---- the runtime ------------------------------------------------------------

my $OUTPUT = '';

# output is the function's print: it goes into the Result's output.
sub output { $OUTPUT .= join '', @_ }

my $MAX_HEADER = 64 * 1024;
my $MAX_BODY   = 16 * 1024 * 1024;
my $IDLE       = 90;    # seconds a kept-alive connection may wait for a request
my $stopping   = 0;


sub main {
    my $port = $ENV{PORT};
    die "function.pl: PORT is not set (the kubelet sets it from the container's port)\n"
        unless defined $port && $port =~ /^\d+$/;
    my $host = $ENV{HOST} || '127.0.0.1';
    my $listener = IO::Socket::IP->new(
        LocalHost => $host, LocalPort => $port, Listen => 128, ReuseAddr => 1, Proto => 'tcp',
    ) or die "function.pl: listen on $host:$port: $@\n";
    $| = 1;
    print STDERR "function.pl: serving " . ($ENV{FUNC_NAME} // 'a function') . " on $host:$port\n";

    # A process per connection: a slow call holds up no other, and the
    # kernel reaps the children (SIGCHLD ignored).
    $SIG{CHLD} = 'IGNORE';
    $SIG{PIPE} = 'IGNORE';
    my %children;
    # PID 1 of a container gets no default signal action: stop on TERM by
    # hand, letting the calls in flight finish (the pod's grace period).
    $SIG{TERM} = $SIG{INT} = sub { $stopping = 1 };
    my $lin = '';
    vec($lin, fileno($listener), 1) = 1;
    while (!$stopping) {
        # Waiting in slices: a TERM that comes just before a blocking call
        # would otherwise go unseen until the next connection.
        my $ready = select(my $lout = $lin, undef, undef, 0.5);
        next unless $ready && $ready > 0;
        my $conn = $listener->accept;
        if (!$conn) {
            # EINTR on TERM ends the loop; other errors (no free file
            # descriptor, say) are retried after a pause.
            select(undef, undef, undef, 0.05) unless $stopping;
            next;
        }
        my $pid = fork;
        if (!defined $pid) {
            print STDERR "function.pl: fork: $!\n";
            close $conn;
            next;
        }
        if ($pid == 0) {
            close $listener;
            %children = ();
            serve($conn);
            POSIX::_exit(0);
        }
        $children{$pid} = 1;
        close $conn;
        delete @children{ grep { !kill 0, $_ } keys %children } if keys(%children) > 64;
    }
    close $listener;
    kill 'TERM', keys %children;
    1 while wait != -1;    # with SIGCHLD ignored: until every child is gone
    print STDERR "function.pl: stopped\n";
    exit 0;
}

# serve answers the requests of one connection until it closes, idles out,
# or the server stops.
sub serve {
    my ($conn) = @_;
    binmode $conn;
    my $buf = '';
    while (!$stopping) {
        my $req = read_request($conn, \$buf) or return;
        if ($req->{error}) {
            respond($conn, $req->{error}[0], { error => $req->{error}[1] }, 1);
            return;
        }
        my $close = $req->{close} || $stopping;
        my ($status, $body) = route($req);
        respond($conn, $status, $body, $close) or return;
        return if $close;
    }
}

sub route {
    my ($req) = @_;
    my ($method, $path) = ($req->{method}, $req->{path});
    $path =~ s/\?.*//s;
    if ($path eq '/invoke' || $path eq '/') {
        return (405, { error => "use POST $path" }) unless $method eq 'POST';
        return (200, invoke($req));
    }
    if ($path eq '/readyz' || $path eq '/healthz') {
        return (405, { error => "use GET $path" }) unless $method eq 'GET';
        return (503, { status => 'stopping' }) if $stopping && $path eq '/readyz';
        return (200, { status => $path eq '/readyz' ? 'ready' : 'ok' });
    }
    return (404, { error => "no route $method $path" });
}

# invoke runs one call: run, then check on its result, within the call's
# timeout, the way funcserver runs a Python function.
sub invoke {
    my ($req) = @_;
    my $start = now_ms();
    my $timeout = $req->{headers}{'x-func-timeout-seconds'} || $ENV{FUNC_TIMEOUT_SECONDS} || 60;
    $timeout = 60 unless $timeout =~ /^\d+(\.\d+)?$/ && $timeout > 0;
    my $arg = $req->{body};
    # The argument is text when it is UTF-8, else its bytes as characters.
    utf8::decode($arg);
    $OUTPUT = '';
    if (my $ctx = $req->{headers}{'x-func-context'}) {
        my $c = eval { json_decode($ctx) };
        output("called as $c->{'function-name'}\n") if ref $c eq 'HASH' && defined $c->{'function-name'};
    }

    my ($result, $checked, $error) = ('', undef, undef);
    my $trace = '';
    {
        local $SIG{__DIE__} = sub { (my $m = $_[0]) =~ s/\s+\z// unless ref $_[0]; $trace = Carp::longmess($m) unless ref $_[0] };
        local $SIG{ALRM} = sub { die { timeout => 1 } };
        alarm(POSIX::ceil($timeout));
        my $ok = eval {
            $result = run($arg);
            $result = '' unless defined $result;
            $checked = check($result) ? \1 : \0;
            1;
        };
        alarm(0);
        if (!$ok) {
            my $e = $@;
            if (ref $e eq 'HASH' && $e->{timeout}) {
                $error = { message => "the call did not finish within its timeout of ${timeout}s",
                           type => 'Timeout', trace => '' };
            } else {
                (my $msg = "$e") =~ s/\s+\z//;
                $msg =~ s/ at \S+ line \d+\.?\z//;
                $error = { message => $msg, type => 'PerlError', trace => $trace || "$e" };
            }
            ($result, $checked) = ('', undef);
        }
    }
    return {
        result     => "$result",
        check      => $checked,
        hasCheck   => \1,
        output     => $OUTPUT,
        error      => $error,
        durationMs => number(now_ms() - $start),
        queueMs    => number(0),
        pod        => $ENV{POD_NAME} // '',
    };
}

# now_ms is a clock in milliseconds: /proc/uptime has hundredths, enough
# here, since Time::HiRes is not in perl-base.
sub now_ms {
    if (open my $f, '<', '/proc/uptime') {
        my ($up) = split ' ', scalar(<$f> // '');
        return int($up * 1000) if defined $up && $up =~ /^[\d.]+$/;
    }
    return time * 1000;
}

# ---- HTTP/1.1 ---------------------------------------------------------------

# fill reads more of the connection into $$buf; false at EOF, on error, or
# when nothing came for $IDLE seconds.
sub fill {
    my ($conn, $buf) = @_;
    my $rin = '';
    vec($rin, fileno($conn), 1) = 1;
    # In slices, so that a TERM that came just before select is seen soon.
    for (my $waited = 0; $waited < $IDLE; $waited += 0.5) {
        return 0 if $stopping;
        my $n = select(my $rout = $rin, undef, undef, 0.5);
        next if $n <= 0;    # nothing yet, or interrupted: look at $stopping
        my $got = sysread($conn, $$buf, 65536, length $$buf);
        return $got ? 1 : 0;
    }
    return 0;               # idle
}

sub read_request {
    my ($conn, $buf) = @_;
    my $end;
    while (($end = index($$buf, "\r\n\r\n")) < 0) {
        return { error => [431, 'request header too large'] } if length($$buf) > $MAX_HEADER;
        fill($conn, $buf) or return undef;
    }
    my $head = substr($$buf, 0, $end + 4, '');
    my ($line, @lines) = split /\r\n/, $head;
    my ($method, $path, $version) = split / /, $line // '';
    return { error => [400, 'malformed request line'] }
        unless defined $version && $version =~ m{^HTTP/1\.([01])$};
    my $minor = $1;
    my %h;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*?)\s*$/ or next;
        $k = lc $k;
        $h{$k} = exists $h{$k} ? "$h{$k}, $v" : $v;
    }
    my $conn_hdr = lc($h{connection} // '');
    my $close = $minor eq '0' ? $conn_hdr !~ /keep-alive/ : $conn_hdr =~ /close/;
    if (($h{expect} // '') =~ /100-continue/i) {
        syswrite($conn, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    my $body = '';
    if (($h{'transfer-encoding'} // '') =~ /chunked/i) {
        while (1) {
            my $eol;
            while (($eol = index($$buf, "\r\n")) < 0) { fill($conn, $buf) or return undef }
            my $size = substr($$buf, 0, $eol + 2, '');
            $size =~ s/[;\r\n].*//s;
            return { error => [400, 'malformed chunk size'] } unless $size =~ /^[0-9a-fA-F]+$/;
            $size = hex $size;
            return { error => [413, 'the argument is too large'] } if length($body) + $size > $MAX_BODY;
            if ($size == 0) {
                # Trailers, if any, end with an empty line.
                while (($eol = index($$buf, "\r\n")) != 0) {
                    if ($eol > 0) { substr($$buf, 0, $eol + 2, ''); next }
                    fill($conn, $buf) or return undef;
                }
                substr($$buf, 0, 2, '');
                last;
            }
            while (length($$buf) < $size + 2) { fill($conn, $buf) or return undef }
            $body .= substr($$buf, 0, $size, '');
            substr($$buf, 0, 2, '');
        }
    } elsif (defined(my $len = $h{'content-length'})) {
        return { error => [400, 'bad Content-Length'] } unless $len =~ /^\d+$/;
        return { error => [413, 'the argument is too large'] } if $len > $MAX_BODY;
        while (length($$buf) < $len) { fill($conn, $buf) or return undef }
        $body = substr($$buf, 0, $len, '');
    }
    return { method => $method, path => $path, headers => \%h, body => $body, close => $close };
}

my %REASON = (200 => 'OK', 400 => 'Bad Request', 404 => 'Not Found', 405 => 'Method Not Allowed',
              413 => 'Payload Too Large', 431 => 'Request Header Fields Too Large', 503 => 'Service Unavailable');

sub respond {
    my ($conn, $status, $value, $close) = @_;
    my $body = json_encode($value);
    my $msg = "HTTP/1.1 $status " . ($REASON{$status} // 'Status') . "\r\n"
        . "Content-Type: application/json\r\n"
        . "Content-Length: " . length($body) . "\r\n"
        . ($close ? "Connection: close\r\n" : '')
        . "\r\n" . $body;
    while (length $msg) {
        my $n = syswrite($conn, $msg);
        return 0 unless $n;
        substr($msg, 0, $n, '');
    }
    return 1;
}

# ---- JSON -------------------------------------------------------------------
# Enough JSON for the contract: json_encode writes hashes, arrays, strings,
# numbers made by number(), undef as null and \1 / \0 as true / false, in
# ASCII (other characters as \u escapes); json_decode reads any JSON text.
# A Perl scalar does not say whether it is a string or a number: every
# scalar is written as a string (a result "42" stays "42") unless marked.

sub number { my ($n) = @_; return bless \$n, 'JSONNumber' }

sub json_encode {
    my ($v) = @_;
    return 'null' unless defined $v;
    if (ref $v eq 'HASH') {
        return '{' . join(',', map { json_string($_) . ':' . json_encode($v->{$_}) } sort keys %$v) . '}';
    }
    return '[' . join(',', map { json_encode($_) } @$v) . ']' if ref $v eq 'ARRAY';
    return $$v ? 'true' : 'false' if ref $v eq 'SCALAR';
    return 0 + $$v if ref $v eq 'JSONNumber';
    return json_string($v);
}

sub json_string {
    my ($s) = @_;
    $s =~ s/([\\"])/\\$1/g;
    $s =~ s/\n/\\n/g;
    $s =~ s/\r/\\r/g;
    $s =~ s/\t/\\t/g;
    $s =~ s/([^\x20-\x7e])/unicode_escape(ord $1)/ge;
    return qq("$s");
}

sub unicode_escape {
    my ($c) = @_;
    return sprintf('\\u%04x', $c) if $c < 0x10000;
    $c -= 0x10000;
    return sprintf('\\u%04x\\u%04x', 0xd800 + ($c >> 10), 0xdc00 + ($c & 0x3ff));
}

sub json_decode {
    my ($text) = @_;
    pos($text) = 0;
    my $v = json_value(\$text);
    $text =~ /\G\s+/gc;
    die "json: trailing text at " . pos($text) . "\n" if pos($text) != length $text;
    return $v;
}

# json_value reads the value at pos($$t) and leaves pos after it. Spaces
# are skipped with \s+, never \s*: Perl refuses a second empty /g match at
# one position, which would stop the parse.
sub json_value {
    my ($t) = @_;
    $$t =~ /\G\s+/gc;
    my $at = pos($$t);
    if ($$t =~ /\G\{/gc) {
        my %o;
        $$t =~ /\G\s+/gc;
        return \%o if $$t =~ /\G\}/gc;
        while (1) {
            $$t =~ /\G\s+/gc;
            die "json: object key expected at " . pos($$t) . "\n" unless substr($$t, pos($$t), 1) eq '"';
            my $k = json_value($t);
            $$t =~ /\G\s+/gc;
            die "json: ':' expected at " . pos($$t) . "\n" unless $$t =~ /\G:/gc;
            $o{$k} = json_value($t);
            $$t =~ /\G\s+/gc;
            next if $$t =~ /\G,/gc;
            return \%o if $$t =~ /\G\}/gc;
            die "json: ',' or '}' expected at " . pos($$t) . "\n";
        }
    }
    if ($$t =~ /\G\[/gc) {
        my @a;
        $$t =~ /\G\s+/gc;
        return \@a if $$t =~ /\G\]/gc;
        while (1) {
            push @a, json_value($t);
            $$t =~ /\G\s+/gc;
            next if $$t =~ /\G,/gc;
            return \@a if $$t =~ /\G\]/gc;
            die "json: ',' or ']' expected at " . pos($$t) . "\n";
        }
    }
    return json_unescape($1) if $$t =~ /\G"((?:[^"\\]|\\.)*)"/gcs;
    return $1 + 0 if $$t =~ /\G(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)/gc;
    return \1 if $$t =~ /\Gtrue/gc;
    return \0 if $$t =~ /\Gfalse/gc;
    return undef if $$t =~ /\Gnull/gc;
    die "json: value expected at $at\n";
}

my %UNESCAPE = ('"' => '"', '\\' => '\\', '/' => '/', b => "\b", f => "\f", n => "\n", r => "\r", t => "\t");

sub json_unescape {
    my ($s) = @_;
    $s =~ s{\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})}
           {chr(0x10000 + ((hex($1) - 0xd800) << 10) + (hex($2) - 0xdc00))}ge;
    $s =~ s{\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))}{defined $1 ? chr(hex $1) : $UNESCAPE{$2}}ge;
    return $s;
}

# Last, so that every file-scope variable above has its value.
main() unless caller;
