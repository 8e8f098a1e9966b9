#!/usr/bin/perl
# SPDX-License-Identifier: MIT
#
# Called by check_man.sh drift:
#   check_man_keys.pl config_keys.c pubd.yaml.5: each key's default and range as
# the page states them against the key table; prints a MISSING line for
# each disagreement.
use strict;
use warnings;

my ($csrc, $page) = @ARGV;
local $/;
open(my $fh, '<', $csrc) or die "$csrc: $!";
my $c = <$fh>;
open($fh, '<', $page) or die "$page: $!";
my $p = <$fh>;

# enum tables: name => { value => word }
my %enums;
while ($c =~ /struct enum_name (\w+)\[\] = \{(.*?)\};/sg) {
	my ($t, $body) = ($1, $2);
	$enums{$t}{$2} //= $1 while $body =~ /\{"([^"]+)",\s*([^}]+?)\s*\}/g;
}
sub size_text {    # "64 * KIB" -> "64 KiB"; "GIB" -> "1 GiB"; "1" -> "1 byte"
	my ($v, $glue) = @_;
	return "1${glue}GiB" if $v eq 'GIB';
	return "$1$glue$2iB" if $v =~ /^(\d+) \* ([KMG])IB$/;
	return $v == 1 ? "1 byte" : "$v bytes" if $v =~ /^\d+$/;
	return undef;
}

# the page: SECTION.KEY => text of its entry under .Sh KEYS, macros dropped
my (%text, $sec, $key, $in);
for (split /\n/, $p) {
	if (/^\.Sh /) { $in = $_ eq '.Sh KEYS'; $key = undef; next }
	next unless $in;
	if (/^\.Ss (\S+)/) { $sec = $1; $key = undef; next }
	if (/^\.It Cm (\S+)/) { $key = "$sec.$1"; $text{$key} = ''; next }
	if (/^\.(It|El)/) { $key = undef; next }
	next unless defined $key;
	s/\\\(dq/"/g;
	s/^\.[A-Z][a-z]\s*//;
	$text{$key} .= " $_";
}

my $bad = 0;
while ($c =~ /\{"([a-z_]+\.[a-z_]+)", (K_\w+),(.*?)\.expect/sg) {
	my ($k, $t, $r) = ($1, $2, $3);
	my ($def) = $r =~ /\.def = ([^,]+),/;
	my ($min) = $r =~ /\.min = ([^,]+),/;
	my ($max) = $r =~ /\.max = ([^,]+),/;
	my ($names) = $r =~ /\.names = (\w+)/;
	my $txt = $text{$k};
	next unless defined $txt;    # a missing entry is reported elsewhere
	$txt =~ s/\s+/ /g;
	my ($want_def, $want_range);
	if ($t eq 'K_ENUM') {
		$want_def = $enums{$names}{$def};
	} elsif ($t eq 'K_BOOL' || $t eq 'K_UINT' || $t eq 'K_DURATION') {
		$want_def = $def;
		$want_def = 'auto' if $def eq ($r =~ /\.auto_value = ([^,]+),/)[0] // '';
		$want_range = "$min to $max" if defined $min && $t ne 'K_BOOL';
	} elsif ($t eq 'K_SIZE') {
		$want_def = size_text($def, '');
		$want_range = size_text($min, ' ') . ' to ' . size_text($max, ' ');
	} elsif ($t eq 'K_MTU') {
		$want_def = $def eq '0' ? 'auto' : $def;
		$want_range = "$min to $max";
	} elsif ($t eq 'K_RATE') {
		$want_def = $def eq '0' ? 'off' : size_text($def, '');
		$want_range = size_text($min, ' ') . ' to ' . size_text($max, ' ');
	} elsif ($t eq 'K_MODE') {
		$want_def = "\"$def\"";
	}
	if (defined $want_def) {
		my ($got) = $txt =~ /Default: (\S+?)[.,]?(?: |$)/;
		# A boolean may be documented as on/off (daemon.shm), its usual form.
		$got = {on => 'true', off => 'false'}->{$got} // $got if defined $got && $t eq 'K_BOOL';
		if (!defined $got || $got ne $want_def) {
			printf "MISSING: pubd.yaml.5 key %s: default %s, the page says %s\n", $k, $want_def, $got // 'nothing';
			$bad++;
		}
	}
	if (defined $want_range && index($txt, "Range $want_range") < 0) {
		printf "MISSING: pubd.yaml.5 key %s: no 'Range %s'\n", $k, $want_range;
		$bad++;
	}
}
exit($bad ? 1 : 0);
